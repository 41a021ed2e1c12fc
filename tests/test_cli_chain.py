"""The CLI's stages chained stage by stage print what ``compile`` prints.

For every sample, ``mytriton parse F | mytriton trace | mytriton lower |
mytriton verify | mytriton opt | mytriton stage-dots | mytriton layouts | mytriton emit-cuda``
(each stage reading the previous one's stdout) gives the same bytes, stage by
stage, as ``mytriton compile F --emit=ast|tree|ssa|opt|staged|cuda``. Then the
options every stage shares: ``-o``, a file argument instead of stdin,
``verify`` passing its input through, ``opt -p`` and ``--print-ir-after-all``,
``mytriton passes``, and that compile-only commands load neither NumPy nor
the CUDA driver.

The chains run the command in this process (tests/mytriton_command.py); one
sample's chain also runs as real processes joined by pipes, to the same bytes.
"""
from __future__ import annotations

import subprocess
from textwrap import dedent

import pytest

from conftest import ROOT, sample_names, sample_trace_args
from mytriton import compiler
from mytriton.passes import DEFAULT_PIPELINE, REGISTRY
from mytriton_command import command_line, ok, process_env, run, run_process

# The stages' tests elsewhere run the command the same way.
cli = run

# Trace options per sample, given alike to `trace` and to `compile`.
SAMPLE_TRACE_OPTIONS = {name: sample_trace_args(name) for name in sample_names()}
SAMPLE_TRACE_OPTIONS["relu"] = ["-D", "BLOCK=256"]  # the same value as its default, given with -D

# The chain's stages, each with the `compile --emit` value that stops there.
CHAIN = [("parse", "ast"), ("trace", "tree"), ("lower", "ssa"), ("verify", None), ("opt", "opt"),
         ("stage-dots", "staged"), ("layouts", "layouts"), ("emit-cuda", "cuda")]
EMITS = [emit for _, emit in CHAIN if emit is not None]


def run_chain(name: str) -> dict[str, bytes]:
    """Each stage's stdout, the next stage reading it from stdin."""
    outputs: dict[str, bytes] = {}
    text = ok(cli("parse", f"samples/{name}.py"))
    outputs["parse"] = text
    for stage, _ in CHAIN[1:]:
        options = SAMPLE_TRACE_OPTIONS[name] if stage == "trace" else []
        text = ok(cli(stage, *options, stdin=text))
        outputs[stage] = text
    return outputs


def run_compile(name: str, emit: str) -> bytes:
    return ok(cli("compile", f"samples/{name}.py", f"--emit={emit}", *SAMPLE_TRACE_OPTIONS[name]))


@pytest.fixture(scope="module")
def runs():
    """{sample: {"chain": {stage: bytes}, "compile": {emit: bytes}}}."""
    return {name: {"chain": run_chain(name), "compile": {emit: run_compile(name, emit) for emit in EMITS}}
            for name in SAMPLE_TRACE_OPTIONS}


def test_a_chain_of_processes_joined_by_pipes_prints_what_the_in_process_chain_prints(runs):
    """The shell's own pipeline: each stage a process reading the one before it through a pipe."""
    stages = [["parse", "samples/matmul.py"]] + [
        [stage, *(SAMPLE_TRACE_OPTIONS["matmul"] if stage == "trace" else [])] for stage, _ in CHAIN[1:]]
    processes: list[subprocess.Popen] = []
    for args in stages:
        source = processes[-1].stdout if processes else subprocess.DEVNULL
        processes.append(subprocess.Popen(command_line(*args), stdin=source, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, cwd=ROOT, env=process_env()))
        if source is not subprocess.DEVNULL:
            source.close()  # the next stage alone holds the pipe: a stage that dies ends the chain
    cuda, last_stderr = processes[-1].communicate(timeout=120)
    for process in processes:
        process.wait(timeout=120)
        stderr = last_stderr if process is processes[-1] else process.stderr.read()
        assert (process.returncode, stderr) == (0, b""), (process.args, stderr.decode())
    assert cuda == runs["matmul"]["chain"]["emit-cuda"] == runs["matmul"]["compile"]["cuda"]


# ---- the chain against compile ----------------------------------------------------------


@pytest.mark.parametrize("name", SAMPLE_TRACE_OPTIONS)
def test_chain_prints_the_same_cuda_as_compile(runs, name):
    assert runs[name]["chain"]["emit-cuda"] == runs[name]["compile"]["cuda"]


@pytest.mark.parametrize("stage,emit", [(s, e) for s, e in CHAIN if e not in (None, "cuda")])
@pytest.mark.parametrize("name", SAMPLE_TRACE_OPTIONS)
def test_chain_stage_prints_the_same_text_as_compile_emit(runs, name, stage, emit):
    assert runs[name]["chain"][stage] == runs[name]["compile"][emit]


@pytest.mark.parametrize("name", SAMPLE_TRACE_OPTIONS)
def test_verify_in_the_chain_passes_its_input_through(runs, name):
    assert runs[name]["chain"]["verify"] == runs[name]["chain"]["lower"]


@pytest.mark.parametrize("name", SAMPLE_TRACE_OPTIONS)
def test_stage_dots_in_the_chain_changes_only_kernels_with_a_dot(runs, name):
    opt, staged = runs[name]["chain"]["opt"], runs[name]["chain"]["stage-dots"]
    if b" = dot " in opt:
        assert b" = dot_shared " in staged and b" = dot " not in staged
    else:
        assert staged == opt


@pytest.mark.parametrize("name", SAMPLE_TRACE_OPTIONS)
def test_chain_output_is_generated_cuda(runs, name):
    cuda = runs[name]["chain"]["emit-cuda"].decode()
    assert cuda.startswith("// mytriton-kernel: ")
    assert 'extern "C" __global__' in cuda


def test_trace_options_reach_the_tree(runs):
    assert b"constexpr(BLOCK = 256)" in runs["relu"]["chain"]["trace"]  # -D BLOCK=256, default 512
    assert b"slope: f32" in runs["leaky_relu"]["chain"]["trace"]  # -s ..., fp32


# ---- options ----------------------------------------------------------------------------


def test_output_option_writes_the_file_and_nothing_to_stdout(runs, tmp_path):
    target = tmp_path / "add.cu"
    result = cli("compile", "samples/add.py", "-o", str(target))
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout == b""
    assert result.stderr == b""
    assert target.read_bytes() == runs["add"]["compile"]["cuda"]


def test_file_argument_reads_the_same_as_stdin(runs, tmp_path):
    tree_file = tmp_path / "sigmoid.tree"
    tree_file.write_bytes(runs["sigmoid"]["chain"]["trace"])  # the chain's `lower` read it from stdin
    assert ok(cli("lower", str(tree_file))) == runs["sigmoid"]["chain"]["lower"]


def test_dash_means_stdin(runs):
    stdin = runs["add"]["chain"]["lower"]
    assert ok(cli("opt", "-", stdin=stdin)) == runs["add"]["chain"]["opt"]


# Valid SSA that is not in printed form (own value names, a comment, spacing):
# `verify` must print it as it came, not re-printed.
UNPRINTED_SSA = dedent("""\
    // written by hand
    kernel k(x: ptr<f32>, n: i32) @"k.py":1:1 {
      %pid = program_id axis=0 : i32 @2:3
      %off   = mul %pid, 4 : i32 @3:3
      %p = addptr x, %off : ptr<f32> @4:3
      store %p, 1.0, none @5:3
    }
""").encode()


def test_verify_prints_its_input_unchanged():
    assert ok(cli("verify", stdin=UNPRINTED_SSA)) == UNPRINTED_SSA


@pytest.fixture(scope="module")
def dumped_opt(runs):
    """``opt --print-ir-after-all`` over the add sample's lowered SSA."""
    result = cli("opt", "--print-ir-after-all", stdin=runs["add"]["chain"]["lower"])
    assert result.returncode == 0, result.stderr.decode()
    return result


def test_print_ir_after_all_leaves_stdout_as_plain_opt(runs, dumped_opt):
    assert dumped_opt.stdout == runs["add"]["chain"]["opt"]


def test_print_ir_after_all_dumps_after_every_default_pass_to_stderr(dumped_opt):
    stderr = dumped_opt.stderr.decode()
    headers = [line for line in stderr.splitlines() if line.startswith("// -----// IR Dump ")]
    assert headers == [f"// -----// IR Dump After {name} //----- //" for name in DEFAULT_PIPELINE]


def test_print_ir_after_all_dumps_are_readable_ssa(dumped_opt):
    dumps = dumped_opt.stderr.decode().split("// -----// IR Dump After ")[1:]
    for dump in dumps:
        text = dump.split("\n", 1)[1]
        assert compiler.print_ssa(compiler.read_ssa(text, "<dump>")) == text


# `fold` turns `mul 4, 8` into 32; only `dce` would erase the unread `add`.
FOLDABLE_SSA = dedent("""\
    kernel k(x: ptr<f32>, n: i32) @"k.py":1:1 {
      %0 = mul 4, 8 : i32 @2:3
      %1 = add n, 1 : i32 @3:3
      %2 = addptr x, %0 : ptr<f32> @4:3
      store %2, 1.0, none @5:3
    }
""").encode()


@pytest.fixture(scope="module")
def fold_only():
    result = cli("opt", "-p", "fold", "--print-ir-after-all", stdin=FOLDABLE_SSA)
    assert result.returncode == 0, result.stderr.decode()
    return result


def test_opt_pass_list_runs_the_named_pass(fold_only):
    assert b"mul 4, 8" not in fold_only.stdout
    assert b"addptr x, 32 : ptr<f32>" in fold_only.stdout


def test_opt_pass_list_runs_no_other_pass(fold_only):
    assert b"add n, 1 : i32" in fold_only.stdout  # dead, but dce did not run
    headers = [line for line in fold_only.stderr.decode().splitlines() if line.startswith("// -----")]
    assert headers == ["// -----// IR Dump After fold //----- //"]


def test_passes_lists_every_registered_pass():
    listed = [line.split()[0] for line in ok(cli("passes")).decode().splitlines()]
    assert listed == list(REGISTRY)


# ---- what a compile-only run imports -----------------------------------------------------


def imported_modules(*args: str) -> set[str]:
    result = run_process(*args, python_flags=("-X", "importtime"))
    assert result.returncode == 0, result.stderr.decode()
    lines = [line for line in result.stderr.decode().splitlines() if line.startswith("import time:")]
    assert lines, "no import log"
    return {line.rsplit("|", 1)[-1].strip() for line in lines}


GPU_RUNTIME = ("numpy", "ctypes", "mytriton.runtime.driver_api", "mytriton.runtime.cuda_driver")


def test_compile_to_ssa_imports_neither_numpy_nor_the_driver():
    modules = imported_modules("compile", "samples/add.py", "--emit=ssa")
    assert "mytriton.lower" in modules  # the log is real
    assert not {m for m in modules if m.split(".")[0] == "numpy" or m in GPU_RUNTIME}


def test_compile_to_cuda_imports_neither_numpy_nor_the_driver():
    modules = imported_modules("compile", "samples/add.py", "--emit=cuda")
    assert "mytriton.backends.cuda.emitter" in modules  # the log is real
    assert not {m for m in modules if m.split(".")[0] == "numpy" or m in GPU_RUNTIME}
    assert not {m for m in modules if m.startswith("mytriton.report")}  # the HTML page: only when asked for


# ---- -D with a string (Triton's ACTIVATION="" in tutorial 03) --------------------------------------
STRING_CONSTEXPR = dedent('''\
    import mytriton
    import mytriton.language as tl


    @mytriton.jit
    def act(x_ptr, out_ptr, ACTIVATION: tl.constexpr):
        x = tl.load(x_ptr + tl.arange(0, 16))
        if ACTIVATION == "relu":
            x = tl.maximum(x, 0.0)
        tl.store(out_ptr + tl.arange(0, 16), x)
    ''')


def string_define_ssa(tmp_path, define: str) -> str:
    (tmp_path / "act.py").write_text(STRING_CONSTEXPR)
    return ok(cli("compile", "act.py", "--emit=ssa", "-s", "*fp32, *fp32", "-D", define, cwd=tmp_path)).decode()


def test_a_quoted_string_define_selects_the_kernels_branch(tmp_path):
    assert " max" in string_define_ssa(tmp_path, 'ACTIVATION="relu"')
    assert " max" not in string_define_ssa(tmp_path, 'ACTIVATION=""')


def test_a_string_define_is_printed_escaped_and_reads_back_in_the_chain(tmp_path):
    text = string_define_ssa(tmp_path, 'ACTIVATION="a\\"b"')
    assert 'ACTIVATION = "a\\"b"' in text.splitlines()[0]
    assert ok(cli("verify", "-", stdin=text.encode(), cwd=tmp_path)).decode() == text


def test_an_unquoted_word_is_not_a_define_value(tmp_path):
    (tmp_path / "act.py").write_text(STRING_CONSTEXPR)
    result = cli("trace", "act.py", "-D", "ACTIVATION=relu", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.decode() == "error: -D ACTIVATION: 'relu' is not a number, boolean, quoted string or dtype\n"
