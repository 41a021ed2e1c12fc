"""A mutation fuzzer over the inputs of every stage: kernel files, kernel
bundles, tree IR and SSA (every sample's, and generated kernels'), mutated and
fed to the command in-process, checking the contract for bad input:

- no Python traceback escapes, and no "internal compiler error";
- exit code 0 or 1; on 1, stderr has an ``error:`` line and no output file
  (nor a partial one) is left behind;
- every input finishes within a time limit, under a memory limit;
- nothing in stderr or the output carries a raw control character from the
  input (names are escaped where printed);
- no file is read because an IR text names it (a sentinel file's text must
  never appear in stderr).

``mutate(text, rng, corpus)`` is deterministic for a seeded ``random.Random``;
``check_input(...)`` runs one input and returns the ``Failure`` it shows, if any.
"""
from __future__ import annotations

import contextlib
import os
import random
import re
import signal
import time
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from sample_signatures import SAMPLE_SIGNATURES

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"


# What each kind of text is fed to (the input path and -o are added).
COMMANDS: dict[str, list[list[str]]] = {
    "kernel": [["parse"], ["trace"], ["compile", "--emit=staged"], ["compile", "--emit=cuda"],
               ["run", "--backend", "interp"]],
    "bundle": [["trace"]],
    "tree": [["lower"]],
    "ssa": [["verify"], ["opt"], ["stage-dots"], ["layouts"], ["emit-cuda"], ["emit-mlir"]],
    "laid_out": [["verify"], ["emit-cuda"], ["emit-mlir"]],
}
TRACING = ("trace", "compile", "run")  # commands that take -D, -s, -k

SENTINEL_TEXT = "FUZZ-SENTINEL-NEVER-QUOTE-ME"
EXTREMES = ("0", "-1", "1", str(2 ** 31), str(2 ** 31 - 1), str(-2 ** 31), str(2 ** 63), str(2 ** 64),
            "1" + "0" * 5000, "nan", "inf", "-inf", "1e308", "1e-320", "0x7fffffff", "65536", "1024",
            "-0.0", "4294967296", "99999999999999999999")
CONTROL = ("\x00", "\x1b[31m", "\n", "\r", "\t", "\x7f", "\u2028", "\ufeff", '"', "\\", "'", "`", "\x0c",
           "*/", "/*", "%", "{", "}", "<", ">", ";", "\u00e9", "\U0001f600", " ",
           "\\n#error injected\\n", "\\u0000", "\\x1b")
WEIRD_NAMES = ("x\x00y", "a\x1b[2Jb", "k\nl", 'q"uote', "back\\slash", "int", "void", "__global__",
               "if", "None", "tl", "_" * 3000, "caf\u00e9", "a-b", "0abc", "", "main", "threadIdx",
               "__mytriton_bundle__", "float", "%0", "$x", "@f")


@dataclass
class Seed:
    """One well-formed input: its kind (a key of COMMANDS), a label saying
    where it came from, its text, and the tracing options it needs."""

    kind: str
    label: str
    text: str
    trace_args: list[str] = field(default_factory=list)
    run_args: list[str] = field(default_factory=list)  # --grid and --arg options, for kernels that can run


@dataclass
class Failure:
    klass: str  # what broke the contract, without the input's details
    command: list[str]
    text: str | bytes
    detail: str
    label: str = ""

    def report(self) -> str:
        shown = self.text if isinstance(self.text, str) else self.text.decode("utf-8", "backslashreplace")
        if len(shown) > 1500:
            shown = shown[:1500] + f"\n... ({len(shown)} characters)"
        detail = self.detail if len(self.detail) <= 1500 else "...\n" + self.detail[-1500:]
        report = (f"[{self.klass}] mytriton {' '.join(self.command)}  (from {self.label})\n{detail}\n"
                  f"--- input ---\n{shown}\n--- end ---")
        return _CONTROL_CHARS.sub(lambda m: repr(m.group())[1:-1], report)  # safe on a terminal


# ---- the corpus ---------------------------------------------------------------------------


def stage_seeds(label: str, source: str, file: str, options: Any, trace_args: list[str]) -> list[Seed]:
    """The texts of every stage of one kernel."""
    from mytriton import compiler

    seeds = [Seed("kernel", f"{label}.py", source, trace_args)]
    bundle = compiler.parse(source, file, options.kernel)
    seeds.append(Seed("bundle", f"{label} bundle", bundle, trace_args))
    kinds = {"tree": "tree", "ssa": "ssa", "opt": "ssa", "staged": "ssa", "layouts": "laid_out"}
    for emit, kind in kinds.items():
        text = compiler.compile_source(source, file, emit, options)
        seeds.append(Seed(kind, f"{label} {emit}", text))
    return seeds


def sample_seeds() -> list[Seed]:
    from mytriton.compiler import Options

    seeds = []
    for path in sorted(SAMPLES.glob("*.py")):
        if path.stem == "demo":
            continue
        signature = SAMPLE_SIGNATURES.get(path.stem)
        args = ["-s", signature] if signature else []
        seeds += stage_seeds(f"samples/{path.stem}", path.read_text(), f"samples/{path.name}",
                             Options(signature=signature), args)
    return seeds


def generated_seeds(seeds: range) -> list[Seed]:
    from fuzz_checks import options_of
    from fuzz_kernels import generate_kernel

    out = []
    for seed in seeds:
        gk = generate_kernel(seed)
        args = ["-s", gk.signature, "-k", gk.name] + [f"-D{k}={v}" for k, v in gk.defines.items()]
        seeds = stage_seeds(f"generated kernel {seed} ({gk.family})", gk.source, gk.file, options_of(gk), args)
        seeds[0].run_args = run_arguments(gk)
        out += seeds
    return out


def run_arguments(gk: Any) -> list[str]:
    """``mytriton run`` options launching a generated kernel on generated data."""
    import numpy as np

    args = ["--grid", ",".join(str(g) for g in gk.grid)]
    for param, value in zip(gk.params, gk.make_args(np.random.default_rng(0))):
        spec = f"rand:{value.size}" if isinstance(value, np.ndarray) else repr(value)
        args += ["--arg", f"{param.name}={spec}"]
    return args


# ---- mutations ----------------------------------------------------------------------------

TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d*)?(?:e[+-]?\d+)?|\s+|.", re.S)
NUMBER = re.compile(r"(?<![A-Za-z_%$.])-?\d+(?:\.\d+)?(?:e[+-]?\d+)?")
IDENT = re.compile(r"(?<![0-9])[A-Za-z_][A-Za-z0-9_]*")


def _tokens(text: str) -> list[str]:
    return TOKEN.findall(text)


def _pick(rng: random.Random, matches: list[re.Match]) -> re.Match | None:
    return rng.choice(matches) if matches else None


def _replace(text: str, m: re.Match | None, new: str) -> str:
    return text if m is None else text[:m.start()] + new + text[m.end():]


def flip_bytes(text: str, rng: random.Random, corpus: list[Seed], kind: str) -> str | bytes:
    data = bytearray(text.encode())
    for _ in range(rng.randint(1, 4)):
        if data:
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    return bytes(data)


def flip_char(text: str, rng: random.Random, corpus: list[Seed], kind: str) -> str:
    if not text:
        return rng.choice(CONTROL)
    i = rng.randrange(len(text))
    return text[:i] + rng.choice(CONTROL + tuple("()[]{},:=+-*/@$%#.0129aZ_")) + text[i + 1:]


def delete_token(text: str, rng: random.Random, corpus: list[Seed], kind: str) -> str:
    tokens = _tokens(text)
    if tokens:
        del tokens[rng.randrange(len(tokens))]
    return "".join(tokens)


def duplicate(text: str, rng: random.Random, corpus: list[Seed], kind: str) -> str:
    if rng.random() < 0.5:
        tokens = _tokens(text)
        if tokens:
            i = rng.randrange(len(tokens))
            tokens.insert(i, tokens[i])
        return "".join(tokens)
    lines = text.split("\n")
    i = rng.randrange(len(lines))
    lines.insert(i, lines[i])
    return "\n".join(lines)


def swap_lines(text: str, rng: random.Random, corpus: list[Seed], kind: str) -> str:
    lines = text.split("\n")
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    lines[i], lines[j] = lines[j], lines[i]
    return "\n".join(lines)


def splice(text: str, rng: random.Random, corpus: list[Seed], kind: str) -> str:
    """Lines of another input (of any stage) in place of some of these."""
    other = rng.choice(corpus).text.split("\n")
    lines = text.split("\n")
    i, n = rng.randrange(len(lines)), rng.randint(1, 4)
    j = rng.randrange(len(other))
    return "\n".join(lines[:i] + other[j:j + n] + lines[i + rng.randint(0, n):])


def extreme_number(text: str, rng: random.Random, corpus: list[Seed], kind: str) -> str:
    numbers = list(NUMBER.finditer(text))
    if rng.random() < 0.2:  # every number at once
        value = rng.choice(EXTREMES)
        return NUMBER.sub(lambda m: value, text)
    return _replace(text, _pick(rng, numbers), rng.choice(EXTREMES))


def deep_nesting(text: str, rng: random.Random, corpus: list[Seed], kind: str) -> str:
    depth = rng.choice((30, 100, 300, 1000, 3000))
    idents = [m for m in IDENT.finditer(text) if m.group() not in ("def", "for", "in", "let", "tree", "kernel")]
    m = _pick(rng, idents)
    if m is None:
        return "(" * depth + text + ")" * depth
    word = m.group()
    if kind == "kernel":
        wrapper = rng.choice((("(", ")"), ("tl.abs(", ")"), ("-", ""), ("[", "][0]"), ("(1 + ", ")")))
    elif kind in ("tree", "bundle"):
        wrapper = rng.choice((("neg(", ")@1:1"), ("abs(", ")@1:1"), ("(", ")"), ("add(1, ", ")@1:1")))
    else:
        wrapper = rng.choice((("(", ")"), ("block<2 x ", ">"), ("ptr<", ">"), ("[", "]")))
    return text[:m.start()] + wrapper[0] * depth + word + wrapper[1] * depth + text[m.end():]


def repeat(text: str, rng: random.Random, corpus: list[Seed], kind: str) -> str:
    count = rng.choice((100, 1000, 2500))  # linear costs stay well inside the time limit
    if rng.random() < 0.5:
        lines = text.split("\n")
        i = rng.randrange(len(lines))
        return "\n".join(lines[:i] + [lines[i]] * count + lines[i:])
    m = _pick(rng, list(IDENT.finditer(text)))
    return _replace(text, m, (m.group() if m else "x") * count)


def control_in_name(text: str, rng: random.Random, corpus: list[Seed], kind: str) -> str:
    m = _pick(rng, list(IDENT.finditer(text)) + list(re.finditer(r'"[^"\n]*"', text)))
    if m is None:
        return text + rng.choice(CONTROL)
    word = m.group()
    i = rng.randint(1, max(1, len(word) - 1))
    return _replace(text, m, word[:i] + rng.choice(CONTROL) + word[i:])


def header_edit(text: str, rng: random.Random, corpus: list[Seed], kind: str, sentinel: str = "") -> str:
    """The first line that names the kernel: its name, file, lines, parameters."""
    lines = text.split("\n")
    index = next((i for i, line in enumerate(lines)
                  if line.startswith(("tree ", "kernel ", "__mytriton_bundle__", "def "))), 0)
    line = lines[index]
    choice = rng.randrange(6)
    if choice == 0:  # the kernel's name
        line = re.sub(r"^(tree |kernel |def )([A-Za-z_]\w*)", lambda m: m.group(1) + rng.choice(WEIRD_NAMES), line)
        line = re.sub(r"'kernel': '[^']*'", lambda m: f"'kernel': {rng.choice(WEIRD_NAMES)!r}", line)
    elif choice == 1:  # the file it names
        path = rng.choice((sentinel or "/etc/hostname", "/dev/zero", "/dev/stdin", "/proc/self/environ",
                           "../" * 20 + "etc/passwd", "", "a\"b", "x\x00y.py", "/" * 3000))
        line = re.sub(r'@"[^"]*"', lambda m: "@" + _quoted(path), line)
        line = re.sub(r"'source': '[^']*'", lambda m: f"'source': {path!r}", line)
    elif choice == 2:  # line numbers
        value = rng.choice(("0", "-1", str(2 ** 31), "1" + "0" * 400, str(10 ** 9)))
        line = re.sub(r":\d+:\d+", f":{value}:{value}", line)
        line = re.sub(r"(: )(\d+)(\}+)", lambda m: m.group(1) + value + m.group(3), line)
    elif choice == 3:  # parameter types
        types = ("ptr<ptr<f32>>", "i1", "f64", "ptr<i0>", "block<0 x f32>", "vector<4294967296 x f32>", "i32",
                 "ptr<bf16>", "shared<1x1 x f32>", "u8")
        line = re.sub(r": ([a-z]\w*(?:<[^()]*?>)?)", lambda m: ": " + rng.choice(types), line, count=rng.randint(1, 3))
    elif choice == 4:  # constexpr values and defaults
        value = rng.choice(EXTREMES + ("'a'", "None", "True", "(1, 2)", "-float('inf')"))
        line = re.sub(r"(= ?)(-?\d+)", lambda m: m.group(1) + value, line)
    else:  # the header cut short or doubled
        line = line[:rng.randrange(len(line) + 1)] if rng.random() < 0.5 else line + " " + line
    lines[index] = line
    return "\n".join(lines)


def _quoted(path: str) -> str:
    return '"' + path.replace("\\", "\\\\").replace('"', '\\"') + '"'


def truncate(text: str, rng: random.Random, corpus: list[Seed], kind: str) -> str:
    return text[:rng.randrange(len(text) + 1)]


MUTATIONS = (flip_bytes, flip_char, delete_token, duplicate, swap_lines, splice, extreme_number, deep_nesting,
             repeat, control_in_name, header_edit, truncate)


def mutate_options(args: list[str], rng: random.Random) -> list[str]:
    """An absurd value for one option: a -D constexpr, the grid, a generated array's size."""
    positions = [i for i, a in enumerate(args) if a.startswith("-D") or (i and args[i - 1] in ("--grid", "--arg"))]
    if not positions:
        return args
    i = rng.choice(positions)
    value = rng.choice(EXTREMES[:10] + ("1073741824", "3", "0,0", "1,1,1,1", "-5"))
    out = list(args)
    if out[i].startswith("-D"):
        out[i] = out[i].split("=")[0] + "=" + value
    elif args[i - 1] == "--grid":
        out[i] = value
    else:
        name, _, spec = out[i].partition("=")
        out[i] = f"{name}=rand:{value}" if spec.startswith("rand:") else f"{name}={value}"
    return out


def mutate(seed: Seed, rng: random.Random, corpus: list[Seed], sentinel: str = "") -> tuple[str | bytes, list[str]]:
    """One to three mutations of ``seed``'s text; returns the text and their names."""
    text: str | bytes = seed.text
    names = []
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        if isinstance(text, bytes):
            break
        mutation = rng.choice(MUTATIONS)
        names.append(mutation.__name__)
        if mutation is header_edit:
            text = header_edit(text, rng, corpus, seed.kind, sentinel)
        else:
            text = mutation(text, rng, corpus, seed.kind)
    return text, names


# ---- running one input --------------------------------------------------------------------


class InputTimeout(BaseException):
    """Raised by the alarm; a BaseException, so that no handler of the compiler's catches it."""


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """At most ``seconds`` of CPU time (what the input costs, whatever else
    the machine is doing), and four times that of wall-clock time (an input
    that waits on something, such as a file it should never have opened)."""
    def expire(signum: int, frame: Any) -> None:
        raise InputTimeout()

    previous = {sig: signal.signal(sig, expire) for sig in (signal.SIGVTALRM, signal.SIGALRM)}
    signal.setitimer(signal.ITIMER_VIRTUAL, seconds)
    signal.setitimer(signal.ITIMER_REAL, 4 * seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        signal.setitimer(signal.ITIMER_REAL, 0)
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _address_space_in_use() -> int:
    """The bytes of address space this process maps now (Linux's
    /proc/self/statm; 0 where it cannot be read)."""
    import resource

    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[0]) * resource.getpagesize()
    except (OSError, ValueError, IndexError):
        return 0


@contextlib.contextmanager
def memory_limit(limit_bytes: int | None) -> Iterator[None]:
    """Cap the address space at ``limit_bytes`` more than the process maps
    now (so an absurd size fails fast instead of swapping the machine);
    restored afterwards."""
    if not limit_bytes:
        yield
        return
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    # On top of what the process maps already: a pytest worker that has imported
    # torch or loaded libnvrtc maps a good part of the limit before the first
    # input, and the campaign's own text then failed with MemoryError.
    wanted = limit_bytes + _address_space_in_use()
    wanted = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    resource.setrlimit(resource.RLIMIT_AS, (wanted, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_ERROR_LINE = re.compile(r"(^|\n)[^\n]*error: ")


def _last_frame(text: str) -> str:
    frames = re.findall(r'  File "([^"]+)", line (\d+), in (\S+)', text)
    if not frames:
        return ""
    file, line, fn = frames[-1]
    return f"{os.path.relpath(file, ROOT) if file.startswith(str(ROOT)) else file}:{line} in {fn}"


def _raw_header_names(cuda: str) -> str | None:
    """A name from the generated file's JSON header (kernel, source, params)
    that holds a line break and appears unescaped in the C below it."""
    import json

    first, _, rest = cuda.partition("\n")
    if not first.startswith("// mytriton-kernel: "):
        return None
    try:
        header = json.loads(first[len("// mytriton-kernel: "):])
    except ValueError:
        return "the header line is not JSON: " + first[:300]
    names = [header.get("kernel"), header.get("source")] + [p[0] for p in header.get("params", [])]
    for name in names:
        if isinstance(name, str) and re.search(r"[\n\r\x00]", name) and name in rest:
            return name
    return None


def command_for(seed: Seed, base: list[str], input_path: str, output_path: str) -> list[str]:
    """The command line; ``run`` writes into the folder ``output_path`` instead of one file."""
    args = [*base, input_path]
    if base[0] in TRACING:
        args += seed.trace_args
    if base[0] == "run":
        return args + seed.run_args + ["--out-dir", output_path]
    return args + ["-o", output_path]


def _output_of(args: list[str]) -> Path:
    return Path(args[args.index("--out-dir" if args[0] == "run" else "-o") + 1])


def check_input(args: list[str], text: str | bytes, directory: Path, timeout: float = 5.0,
                label: str = "") -> Failure | None:
    """Run ``mytriton ARGS`` in-process on ``text`` (already written where
    ARGS say) and return what breaks the contract, or None."""
    from click.testing import CliRunner

    from mytriton.cli import main

    output = _output_of(args)
    runner = CliRunner(env={"MYTRITON_DEBUG": "1"})
    shown = [a if not a.startswith(str(directory)) else os.path.basename(a) for a in args]

    def failure(klass: str, detail: str) -> Failure:
        return Failure(klass, shown, text, detail, label)

    start = time.monotonic()
    try:
        # Python's own warnings about the input (ast.parse on an invalid escape) are not the contract's concern here
        with time_limit(timeout), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = runner.invoke(main, args, catch_exceptions=True)
    except InputTimeout:
        return failure("timeout", f"still running after {timeout:g} s of CPU time or {4 * timeout:g} s in all")
    except MemoryError:
        return failure("memory", "MemoryError escaped")
    elapsed = time.monotonic() - start
    stderr = result.stderr
    leftovers = [p.name for p in directory.iterdir() if p.name.startswith(".mytriton-")]
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        frame = traceback.extract_tb(result.exc_info[2])[-1]
        where = f"{os.path.relpath(frame.filename, ROOT)}:{frame.lineno} in {frame.name}"
        return failure(f"traceback {type(result.exception).__name__} at {where}",
                       "".join(traceback.format_exception(*result.exc_info))[-2000:])
    if "internal compiler error" in stderr:
        message = re.search(r"internal compiler error: ([A-Za-z_.]+)", stderr)
        kind = message.group(1) if message else "?"
        return failure(f"internal compiler error {kind} at {_last_frame(stderr)}", stderr[-2500:])
    if result.exit_code not in (0, 1):
        return failure(f"exit code {result.exit_code}", stderr[-2000:])
    if SENTINEL_TEXT in stderr:
        return failure("file named in the input was read", stderr[-2000:])
    if leftovers:
        return failure("partial output left behind", ", ".join(leftovers))
    if result.exit_code == 1:
        if not _ERROR_LINE.search(stderr):
            return failure("exit 1 without an error: line", stderr[-2000:] or "(empty stderr)")
        if output.exists() and (not output.is_dir() or any(output.iterdir())):
            return failure("output file written on failure", stderr[-2000:])
        # Diagnostic lines must escape what they quote (the source line under
        # them is the input's own text, shown as it is).
        messages = "\n".join(line for line in stderr.split("\n") if re.search(r"(error|note|warning): ", line))
        if _CONTROL_CHARS.search(messages):
            return failure("raw control character in the error message", repr(messages[-1500:]))
    else:
        if not output.exists():
            return failure("exit 0 without the output file", stderr[-2000:])
        if output.is_dir():
            return None
        written = output.read_bytes().decode("utf-8", "replace")
        # verify echoes its input, and a bundle (parse, compile --emit=ast)
        # copies the kernel's own lines verbatim (a form feed is Python whitespace).
        echoes = args[0] in ("verify", "parse") or (args[0] == "compile" and "--emit=ast" in args)
        if not echoes and _CONTROL_CHARS.search(written):
            found = _CONTROL_CHARS.search(written)
            return failure("raw control character in the output",
                           repr(written[max(0, found.start() - 200):found.end() + 200]))
        injected = _raw_header_names(written) if args[0] in ("emit-cuda", "compile") else None
        if injected:
            return failure("a name from the input printed raw into the C source", repr(injected))
    del elapsed
    return None


def fuzz_one(seed: Seed, base: list[str], rng: random.Random, corpus: list[Seed], directory: Path,
             timeout: float = 5.0) -> Failure | None:
    """Mutate ``seed``, write it, run ``base`` on it, check the contract."""
    import shutil

    for stale in directory.iterdir():
        if stale.name != "sentinel.txt":
            shutil.rmtree(stale) if stale.is_dir() and not stale.is_symlink() else stale.unlink()
    sentinel = directory / "sentinel.txt"
    if not sentinel.exists():
        sentinel.write_text(f"{SENTINEL_TEXT}\n" * 50)
    text, names = mutate(seed, rng, corpus, str(sentinel))
    input_path = directory / ("input.py" if seed.kind == "kernel" else "input.txt")
    input_path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass"))
    args = command_for(seed, base, str(input_path), str(directory / ("out" if base[0] == "run" else "output.txt")))
    if base[0] in TRACING and rng.random() < 0.2:
        args = mutate_options(args, rng)
        names.append("mutate_options")
    found = check_input(args, text, directory, timeout, f"{seed.label}, mutated by {', '.join(names)}")
    return found


def seeds_and_commands(corpus: list[Seed]) -> list[tuple[Seed, list[str]]]:
    return [(seed, base) for seed in corpus for base in COMMANDS[seed.kind]
            if base[0] != "run" or seed.run_args]


def check_subprocess(args: list[str], text: str | bytes, directory: Path, timeout: float = 20.0,
                     label: str = "") -> Failure | None:
    """The same contract through the real command in its own process (the
    input already written where ARGS say)."""
    import subprocess
    import sys

    output = _output_of(args)
    shown = [a if not a.startswith(str(directory)) else os.path.basename(a) for a in args]
    try:
        proc = subprocess.run([sys.executable, "-m", "mytriton", *args], capture_output=True, timeout=timeout,
                              cwd=directory, env={**os.environ, "MYTRITON_DEBUG": "1"})
    except subprocess.TimeoutExpired:
        return Failure("timeout", shown, text, f"still running after {timeout:g} s", label)
    stderr = proc.stderr.decode("utf-8", "replace")
    if "internal compiler error" in stderr or "Traceback (most recent call last)" in stderr:
        return Failure(f"internal compiler error at {_last_frame(stderr)}", shown, text, stderr[-2500:], label)
    if proc.returncode not in (0, 1):
        return Failure(f"exit code {proc.returncode}", shown, text, stderr[-2000:], label)
    if proc.returncode == 1 and not _ERROR_LINE.search(stderr):
        return Failure("exit 1 without an error: line", shown, text, stderr[-2000:], label)
    if proc.returncode == 1 and output.exists() and (not output.is_dir() or any(output.iterdir())):
        return Failure("output file written on failure", shown, text, stderr[-2000:], label)
    return None


def run_campaign(corpus: list[Seed], count: int, seed: int, directory: Path, timeout: float = 5.0,
                 memory: int | None = 3 << 30, kinds: tuple[str, ...] | None = None) -> list[Failure]:
    """``count`` mutated inputs drawn from ``corpus`` with a seeded generator."""
    rng = random.Random(seed)
    pairs = [(s, base) for s, base in seeds_and_commands(corpus) if kinds is None or s.kind in kinds]
    failures = []
    with memory_limit(memory):
        for _ in range(count):
            s, base = rng.choice(pairs)
            found = fuzz_one(s, base, rng, corpus, directory, timeout)
            if found is not None:
                failures.append(found)
    return failures


def summarize(failures: list[Failure]) -> str:
    """One line per distinct class, with a count, then the first input of each."""
    classes: dict[str, list[Failure]] = {}
    for f in failures:
        classes.setdefault(f.klass, []).append(f)
    lines = [f"{len(failures)} failure(s) in {len(classes)} class(es):"]
    lines += [f"  {len(fs):5d}  {klass}" for klass, fs in sorted(classes.items(), key=lambda kv: -len(kv[1]))]
    for fs in classes.values():
        smallest = min(fs, key=lambda f: len(f.text))
        lines.append("\n" + smallest.report())
    return "\n".join(lines)
