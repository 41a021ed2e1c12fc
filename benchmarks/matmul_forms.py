"""Matmul spellings: one row per way of writing C = A @ B as a Triton kernel
(the files in tests/triton_style), mytriton against Triton compiling the
same source with the same launch, in one process.

    python benchmarks/matmul_forms.py [--dtype f16|bf16|f32] [--precision tf32|ieee]
        [--sizes 4096 3000x2000x1000] [--config 128x128x64] [--num-warps 4]
        [--num-stages 3] [--forms tutorial offsets ...] [--repeat 20] [--first-calls 1]
        [--json PATH]

Each row: mytriton's remarks for the kernel's dots (staged? pipelined? wgmma?),
then both results checked against torch.matmul in f32 (relative Frobenius
error under 1e-2; 1e-4 for exact f32, 1e-3 where the kernel stores f16),
then both timed with the same grid, constexprs, num_warps and num_stages:
milliseconds, TFLOP/s (2 M N K per product) and the ratio Triton ms /
mytriton ms (above 1: mytriton is faster; the issue's target is 0.9). The
first call of each (both caches empty) is printed and recorded too: with
``--first-calls N``, the median of N, the sides alternating, each of the
kernel loaded anew into emptied caches. A form
that fails on one side (a compile error, a wrong result) is printed and
recorded as such, and the run goes on with the next row.

Sizes are ``N`` (square) or ``MxNxK``; the ragged default (3000x2000x1000)
runs for the forms that mask only. ``--dtype f32`` runs TF32 unless
``--precision ieee`` (exact f32, both compilers: MYTRITON_F32_DEFAULT and
TRITON_F32_DEFAULT). The forms (``--forms``; all by default) are listed by
``--help`` below.
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from common import (ROOT, Results, add_json_option, cold_caches, first_call, first_call_line, load_as_triton,
                    load_copy, load_module, recold_caches, time_cuda, timing_columns, triton_available)

STYLE = ROOT / "tests" / "triton_style"
GROUP_COUNT = 4  # products in the grouped GEMM's group (the same operands, GROUP_COUNT outputs)
H200_SMS = 132  # multiprocessors of an H200 (the persistent and grouped grids; the script asks the GPU)
TARGET = 0.9  # the target: every form at 0.9x of Triton or better


# ---- one problem: operands in each layout the forms read -----------------------------------------------


@dataclass
class Problem:
    """One matmul's sizes and operands (``a`` [M, K], ``b`` [K, N], and the
    same values stored transposed: ``a_km`` [K, M], ``b_nk`` [N, K]), with
    the launch settings every form shares."""

    M: int
    N: int
    K: int
    tiles: tuple[int, int, int]
    num_warps: int
    num_stages: int
    num_sms: int
    split_k: int
    a: Any
    b: Any
    a_km: Any
    b_nk: Any

    @property
    def launch_options(self) -> dict[str, int]:
        return {"num_warps": self.num_warps, "num_stages": self.num_stages}


def make_problem(M: int, N: int, K: int, dtype: Any, device: str, tiles: tuple[int, int, int], num_warps: int,
                 num_stages: int, num_sms: int, split_k: int, empty: bool = False) -> Problem:
    """Random operands on ``device`` (``empty``: uninitialised, for a compile-only test)."""
    import torch

    if empty:
        a = torch.empty((M, K), dtype=dtype, device=device)
        b = torch.empty((K, N), dtype=dtype, device=device)
    else:
        a = torch.randn((M, K), device=device).to(dtype)
        b = torch.randn((K, N), device=device).to(dtype)
    return Problem(M, N, K, tiles, num_warps, num_stages, num_sms, split_k, a, b,
                   a.T.contiguous(), b.T.contiguous())


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def strides(*tensors: Any) -> list[int]:
    return [s for t in tensors for s in t.stride()]


# ---- the forms ---------------------------------------------------------------------------------------------

Launch = tuple[tuple, tuple, dict]  # grid, positional arguments, keyword arguments (constexprs)


@dataclass(frozen=True)
class Form:
    """One spelling: its kernel file (tests/triton_style/<stem>.py) and
    kernel (an autotuned one's @jit function is launched with a fixed
    config), how it is launched, what its output is."""

    stem: str
    kernel: str
    spelling: str
    launch: Callable[[Problem, Any], Launch]
    masks: bool = True  # takes sizes that are not multiples of the tiles
    out: str = "input"  # the output's dtype: "input" (the operands'), "f16" or "f32"
    dtypes: tuple[str, ...] = ("f16", "bf16", "f32")
    autotuned: bool = False
    zero_output: bool = False  # the kernel adds into C (split-K's atomics)
    grouped: bool = False  # C is GROUP_COUNT outputs (the grouped GEMM)
    needs: Callable[[Problem], str | None] = field(default=lambda p: None)  # why a problem is refused

    def path(self) -> Path:
        return STYLE / f"{self.stem}.py"


def _tutorial(p: Problem, c: Any) -> Launch:
    bm, bn, bk = p.tiles
    return ((cdiv(p.M, bm) * cdiv(p.N, bn),), (p.a, p.b, c, p.M, p.N, p.K, *strides(p.a, p.b, c)),
            {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": 8, "ACTIVATION": ""})


def _block_sizes(p: Problem, prefix: str) -> dict[str, int]:
    return dict(zip((f"{prefix}M", f"{prefix}N", f"{prefix}K"), p.tiles))


def _grid2(p: Problem) -> tuple[int, int]:
    return cdiv(p.M, p.tiles[0]), cdiv(p.N, p.tiles[1])


def _plain(p: Problem, c: Any, prefix: str = "BLOCK_", **extra: Any) -> Launch:
    """The 2D-grid kernels taking (a, b, c, M, N, K, a's, b's and c's strides)."""
    return _grid2(p), (p.a, p.b, c, p.M, p.N, p.K, *strides(p.a, p.b, c)), {**_block_sizes(p, prefix), **extra}


def _block_ptr(p: Problem, c: Any) -> Launch:
    return _plain(p, c, "BLOCK_SIZE_")


def _descriptor(p: Problem, c: Any) -> Launch:
    return _grid2(p), (p.a, p.b, c, p.M, p.N, p.K), _block_sizes(p, "BLOCK_SIZE_")


def _descriptor_needs(p: Problem) -> str | None:
    size = p.a.element_size()
    if (p.K * size) % 16 or (p.N * size) % 16 or (p.N * 2) % 16:
        return "TMA needs rows of a multiple of 16 bytes"
    return None


def _transposed_b(p: Problem, c: Any) -> Launch:
    return _grid2(p), (p.a, p.b_nk, c, p.M, p.N, p.K, *strides(p.a, p.b_nk, c)), _block_sizes(p, "B")


def _trans_b(p: Problem, c: Any) -> Launch:
    return _grid2(p), (p.a, p.b_nk, c, p.M, p.N, p.K, *strides(p.a, p.b_nk, c)), _block_sizes(p, "BLOCK_")


def _trans_a(p: Problem, c: Any) -> Launch:
    return _grid2(p), (p.a_km, p.b, c, p.M, p.N, p.K, *strides(p.a_km, p.b, c)), _block_sizes(p, "BLOCK_")


def _tl_range(p: Problem, c: Any) -> Launch:
    return _plain(p, c, NUM_STAGES=p.num_stages)


def _split_k(p: Problem, c: Any) -> Launch:
    bm, bn, _ = p.tiles
    return ((cdiv(p.M, bm) * cdiv(p.N, bn), p.split_k), (p.a, p.b, c, p.M, p.N, p.K, *strides(p.a, p.b, c)),
            {**_block_sizes(p, "BLOCK_"), "SPLIT_K": p.split_k})


def _persistent(p: Problem, c: Any) -> Launch:
    bm, bn, _ = p.tiles
    # Tutorial 09's grid: one program per multiprocessor (fewer where there are fewer tiles).
    grid = (min(p.num_sms, cdiv(p.M, bm) * cdiv(p.N, bn)),)
    return grid, (p.a, p.b, c, p.M, p.N, p.K, *strides(p.a, p.b, c)), \
        {**_block_sizes(p, "BLOCK_SIZE_"), "GROUP_SIZE_M": 8, "NUM_SMS": p.num_sms}


def _persistent_descriptors(p: Problem, c: Any) -> Launch:
    bm, bn, bk = p.tiles
    grid = (min(p.num_sms, cdiv(p.M, bm) * cdiv(p.N, bn)),)
    return grid, (p.a, p.b_nk, c, p.M, p.N, p.K), \
        {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_SIZE_M": 8, "EPILOGUE_SUBTILE": False,
         "NUM_SMS": p.num_sms, "WARP_SPECIALIZE": False}


def _grouped(p: Problem, c: list) -> Launch:
    import torch

    device = p.a.device
    addresses = [[p.a.data_ptr()] * len(c), [p.b.data_ptr()] * len(c), [t.data_ptr() for t in c]]
    pointers = [torch.tensor(column, dtype=torch.int64, device=device) for column in addresses]
    sizes = torch.tensor([p.M, p.N, p.K] * len(c), dtype=torch.int32, device=device)
    lds = torch.tensor([p.a.stride(0), p.b.stride(0), c[0].stride(0)] * len(c), dtype=torch.int32, device=device)
    # Tutorial 08's grid: NUM_SM programs walk every product's tiles.
    return (p.num_sms,), (*pointers, sizes, lds, len(c)), {"NUM_SM": p.num_sms, **_block_sizes(p, "BLOCK_SIZE_")}


def _gathered(p: Problem, c: Any) -> Launch:
    import torch

    device = p.a.device
    bm, bn, _ = p.tiles
    # One expert whose routed rows are A's in order: the kernel still gathers each row through the index.
    token = torch.arange(p.M, dtype=torch.int32, device=device)
    expert_start = torch.tensor([0, p.M], dtype=torch.int32, device=device)
    tile_row_start = torch.arange(0, p.M, bm, dtype=torch.int32, device=device)
    tile_expert = torch.zeros_like(tile_row_start)
    return ((len(tile_row_start), cdiv(p.N, bn)),
            (p.a, p.b_nk, token, expert_start, tile_row_start, tile_expert, c, p.K, p.N, p.a.stride(0),
             p.N * p.K, p.b_nk.stride(0), c.stride(0)), _block_sizes(p, "BLOCK_"))


FORMS: dict[str, Form] = {
    "tutorial": Form("matmul", "matmul_kernel", "tutorial 03: pointer increments, K mask, grouped ordering "
                     "(1D grid), f16 output", _tutorial, out="f16", autotuned=True),
    "offsets": Form("matmul_offsets", "matmul_offsets", "offsets recomputed from the loop index "
                    "(k * BK + offs_k), masks on M, N and K", _plain),
    "unmasked": Form("matmul_unmasked", "matmul_unmasked", "no masks (whole tiles only), pointer increments",
                     _plain, masks=False),
    "helper": Form("matmul_loop_helper", "matmul_loop_helper", "the K loop in a @jit helper returning the "
                   "accumulator (pointer increments, K mask)", _plain),
    "tl_range": Form("matmul_tl_range", "matmul_tl_range", "tl.range(0, K, BK, num_stages=NUM_STAGES), "
                     "offsets from the loop variable, masks on every axis", _tl_range),
    "trans_b": Form("matmul_trans", "matmul_trans_b", "x @ w.T: w [N, K] loaded [BN, BK], "
                    "tl.dot(a, tl.trans(b))", _trans_b),
    "trans_a": Form("matmul_trans", "matmul_trans_a", "a.T @ b: a [K, M] loaded [BK, BM], "
                    "tl.dot(tl.trans(a), b)", _trans_a),
    "k_major_b": Form("matmul_transposed_b", "matmul_transposed_b", "x @ w.T: w [N, K] loaded K-major as a "
                      "[BK, BN] tile (strides swapped)", _transposed_b),
    "block_ptr": Form("block_ptr_matmul", "matmul_kernel_with_block_pointers", "tl.make_block_ptr + "
                      "tl.advance, boundary_check on both axes, f16 output", _block_ptr, out="f16"),
    "descriptor": Form("descriptor_matmul", "matmul_kernel_descriptor", "tl.make_tensor_descriptor, "
                       "desc.load / desc.store, f16 output", _descriptor, out="f16", needs=_descriptor_needs),
    "split_k": Form("matmul_split_k", "_matmul_split_k_kernel", "split-K (grid axis 1), tl.atomic_add into "
                    "f32 C", _split_k, out="f32", zero_output=True),
    "persistent": Form("persistent_matmul", "matmul_kernel_persistent", "tutorial 09: persistent, "
                       "tl.range(flatten=True) over tiles, grid = SM count", _persistent),
    "persistent_descriptors": Form("persistent_matmul_descriptors", "matmul_descriptor_persistent",
                                   "tutorial 09's descriptor form: persistent, tl.make_tensor_descriptor for A and "
                                   "B [N, K] (b.T), the grouped place from a helper, f16 output",
                                   _persistent_descriptors, out="f16", needs=_descriptor_needs),
    "gathered": Form("matmul_gathered_rows", "moe_up_proj", "Liger's fused MoE: A's rows gathered through "
                     "an index loaded before the K loop (int64 offsets), x @ w.T with w [N, K] per expert, "
                     "masks on the expert's rows and on N", _gathered),
    "grouped": Form("grouped_gemm", "grouped_matmul_kernel", f"tutorial 08: grouped GEMM ({GROUP_COUNT} "
                    "products), pointers loaded from arrays, no masks, grid = SM count", _grouped,
                    masks=False, out="f16", dtypes=("f16",), autotuned=True, grouped=True),
}


def kernel_of(form: Form, module: Any) -> Any:
    """The @jit kernel itself (an autotuned kernel's function, launched with the benchmark's config)."""
    kernel = getattr(module, form.kernel)
    return kernel.fn if form.autotuned else kernel


def refused(form: Form, p: Problem, dtype: str) -> str | None:
    """Why ``form`` does not run on ``p`` (None: it does)."""
    if dtype not in form.dtypes:
        return f"{dtype} operands (the kernel takes {', '.join(form.dtypes)})"
    if not form.masks and (p.M % p.tiles[0] or p.N % p.tiles[1] or p.K % p.tiles[2]):
        return "sizes that are not multiples of the tiles (the kernel has no masks)"
    return form.needs(p)


def make_output(form: Form, p: Problem) -> Any:
    import torch

    dtype = {"input": p.a.dtype, "f16": torch.float16, "f32": torch.float32}[form.out]
    count = GROUP_COUNT if form.grouped else 1
    outputs = [torch.full((p.M, p.N), float("nan"), dtype=dtype, device=p.a.device) for _ in range(count)]
    return outputs if form.grouped else outputs[0]


def outputs_of(form: Form, c: Any) -> list:
    return list(c) if form.grouped else [c]


def flops_of(form: Form, p: Problem) -> float:
    return 2.0 * p.M * p.N * p.K * (GROUP_COUNT if form.grouped else 1)


# ---- mytriton's remarks ------------------------------------------------------------------------------------


def mytriton_remarks(kernel: Any, compiled: Any, ptxas: str | None = None) -> list[str]:
    """The remarks of a compiled specialisation's dots (what MYTRITON_REMARKS=1
    prints), compiled again to CUDA outside any timing: ``file:line: message``
    each. ``ptxas``: why ptxas is not run (None: it runs where nvcc is)."""
    from mytriton.deep_stack import run_deep
    from mytriton.remarks import compile_remarks

    text = kernel.source()[0]
    remarks = run_deep(compile_remarks, text, kernel.file, compiled.options, None, ptxas)
    return [f"{Path(r.loc.file).name}:{r.loc.line}: {r.message}" if r.loc else r.message for r in remarks]


def remark_summary(remarks: list[str]) -> dict[str, bool]:
    """Whether every dot was staged, pipelined, and on wgmma."""
    def every(test: Callable[[str], bool]) -> bool:
        return bool(remarks) and all(test(r) for r in remarks)

    return {"staged": every(lambda r: re.search(r": (B )?staged \(", r) is not None),
            "pipelined": every(lambda r: re.search(r"; \d+ stages", r) is not None),
            "wgmma": every(lambda r: "wgmma m64" in r)}


# ---- options -----------------------------------------------------------------------------------------------


def parse_size(text: str) -> tuple[int, int, int]:
    parts = [int(v) for v in text.lower().split("x")]
    if len(parts) == 1:
        return parts[0], parts[0], parts[0]
    if len(parts) != 3:
        raise argparse.ArgumentTypeError(f"a size is N or MxNxK, got {text!r}")
    return parts[0], parts[1], parts[2]


def parse_config(text: str) -> tuple[int, int, int]:
    parts = [int(v) for v in text.lower().split("x")]
    if len(parts) != 3:
        raise argparse.ArgumentTypeError(f"a config is BMxBNxBK, got {text!r}")
    return parts[0], parts[1], parts[2]


# The tiles the other dot benchmarks use on the H200 (benchmarks/NOTES.md): 128x128x64 for 16-bit
# operands, 128x128x32 for f32 (an f32 128x128x64 tile's three stages would take 192 KiB).
DEFAULT_CONFIG = {"f16": "128x128x64", "bf16": "128x128x64", "f32": "128x128x32"}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    forms = "\n".join(f"  {name:<11} {form.stem}.py: {form.spelling}" for name, form in FORMS.items())
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog="forms:\n" + forms,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dtype", choices=["f16", "bf16", "f32"], default="f16")
    parser.add_argument("--precision", choices=["tf32", "ieee"], default=None,
                        help="f32 dots: tf32 (default, as in Triton) or ieee (exact f32)")
    parser.add_argument("--sizes", nargs="+", default=["4096", "3000x2000x1000"],
                        help="N or MxNxK; a size that is not a multiple of the tiles runs the masking forms only")
    parser.add_argument("--config", default=None, help="BMxBNxBK (default 128x128x64; 128x128x32 for f32)")
    parser.add_argument("--num-warps", type=int, default=4)
    parser.add_argument("--num-stages", type=int, default=3)
    parser.add_argument("--split-k", type=int, default=4, help="SPLIT_K of the split-K form")
    parser.add_argument("--forms", nargs="+", choices=list(FORMS), default=list(FORMS), metavar="FORM",
                        help="the forms to run (default: all; listed below)")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--first-calls", type=int, default=1, metavar="N",
                        help="first calls per row and side, each of the kernel loaded anew with both compilers' "
                             "caches emptied; the row shows their median (default 1)")
    add_json_option(parser)
    args = parser.parse_args(argv)
    if args.precision is not None and args.dtype != "f32":
        parser.error("--precision is for --dtype f32 (f16 and bf16 dots run on tensor cores as they are)")
    args.config = args.config or DEFAULT_CONFIG[args.dtype]
    try:
        parse_config(args.config)
        for size in args.sizes:
            parse_size(size)
    except (ValueError, argparse.ArgumentTypeError) as error:
        parser.error(str(error))
    return args


def tolerance(dtype: str, precision: str | None, out: str) -> float:
    """Relative Frobenius error allowed against torch.matmul in f32."""
    if dtype == "f32" and precision == "ieee":
        return 1e-4 if out in ("f32", "input") else 1e-3  # exact products; an f16 store rounds
    return 1e-2  # f16, bf16 and TF32 products round the operands


# ---- the run -----------------------------------------------------------------------------------------------


def short(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"[:300]


def cuda_sync() -> None:
    import torch

    torch.cuda.synchronize()


@dataclass
class Timing:
    """How a row is measured: on the GPU, CUDA events (``time_cuda``) and
    ``first_call``; a test on the CPU passes plain clocks and backend "interp"."""

    first: Callable[[Callable[[], None]], float] = first_call
    timer: Callable[..., float] = time_cuda
    sync: Callable[[], None] = cuda_sync
    repeat: int = 20
    ptxas: str | None = None  # why ptxas is not run for the remarks (None: it runs where nvcc is)


@dataclass
class Row:
    results: dict[str, float] = field(default_factory=dict)  # milliseconds by side
    firsts: dict[str, float] = field(default_factory=dict)  # first-call seconds by side
    failures: dict[str, str] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)  # errors, remarks and their summary

    @property
    def ratio(self) -> float | None:
        """Triton's milliseconds over mytriton's (above 1: mytriton is faster)."""
        return self.results["triton"] / self.results["mytriton"] if len(self.results) == 2 else None


def measure(name: str, form: Form, p: Problem, reference: Any, tol: float, sides: list[tuple[str, Any, dict]],
            timing: Timing) -> Row:
    """One form on one problem, for each side (name, kernel, extra launch
    keywords): the first call, mytriton's remarks (printed), the check
    against ``reference``, the timing. A side that fails is printed and kept
    in ``failures``; the others still run."""
    row = Row()
    for side, kernel, extra in sides:
        try:
            c, launch, compiled = row_launch(form, p, kernel, extra)

            row.firsts[side] = timing.first(launch)
            if side == "mytriton":
                try:
                    remarks = mytriton_remarks(kernel, compiled[0], timing.ptxas)
                except Exception as error:  # the remarks are a report: a failure there is printed, no more
                    remarks = [f"(no remarks: {short(error)})"]
                row.info["remarks"] = remarks
                row.info.update(remark_summary(remarks))
                for remark in remarks:
                    print(f"    remark: {remark}", flush=True)
            error = max(((out.float() - reference).norm() / reference.norm()).item() for out in outputs_of(form, c))
            row.info["error" if side == "mytriton" else "triton_error"] = error
            if not error < tol:  # NaN too
                raise AssertionError(f"relative error {error:.2e} against torch.matmul (tolerance {tol})")
            row.results[side] = timing.timer(launch, repeat=timing.repeat)
        except Exception as error:
            row.failures[side] = short(error)
            print(f"{name:<12} {side} FAILED: {row.failures[side]}", flush=True)
            trace = "".join(traceback.format_exception(type(error), error, error.__traceback__, limit=-3))
            print("    " + trace.strip().replace("\n", "\n    "), flush=True)
            try:
                timing.sync()  # an error the launch left behind surfaces here, not in the next row
            except Exception as sticky:
                print(f"    after the failure: {short(sticky)}", flush=True)
    return row


def row_launch(form: Form, p: Problem, kernel: Any, extra: dict) -> tuple[Any, Callable[[], None], list]:
    """A fresh output for ``form`` on ``p`` (zeroed where the form adds into
    it), the launch of ``kernel`` that writes it, and the list the launch
    puts its first handle in (mytriton's remarks read it)."""
    c = make_output(form, p)
    if form.zero_output:
        for out in outputs_of(form, c):
            out.zero_()
    grid, call_args, constexprs = form.launch(p, c)
    kwargs = {**constexprs, **p.launch_options, **extra}
    compiled: list = []

    def launch() -> None:
        handle = kernel[grid](*call_args, **kwargs)
        if not compiled:
            compiled.append(handle)
    return c, launch, compiled


def first_launch(form: Form, p: Problem, kernel: Any, extra: dict, timing: Timing) -> float:
    """The seconds of one more first call of ``kernel`` (loaded anew, the caches emptied)."""
    return timing.first(row_launch(form, p, kernel, extra)[1])


def more_first_calls(row: Row, form: Form, p: Problem, sides: list[tuple[str, dict]],
                     fresh: Callable[[Form, str, int], Any], timing: Timing, first_calls: int) -> None:
    """Take ``first_calls`` first calls in all of each side that ran (the
    row's own first), the sides alternating, each of a kernel loaded anew
    (``fresh``) after both caches were emptied; the row keeps their median
    and the samples (a first call on the H200 moves by up to 0.2 s)."""
    samples = {side: [row.firsts[side]] for side, _ in sides if side in row.firsts and side not in row.failures}
    for again in range(1, first_calls):
        recold_caches()
        for side, extra in sides:
            if side not in samples:
                continue
            try:
                samples[side].append(first_launch(form, p, fresh(form, side, again), extra, timing))
            except Exception as error:
                print(f"    first call {again + 1} of {side} FAILED: {short(error)}", flush=True)
                del samples[side]
    for side, taken in samples.items():
        row.firsts[side] = statistics.median(taken)
        row.info[f"{side}_first_calls_s"] = taken


def run_forms(args: argparse.Namespace, device: str, num_sms: int, triton_side: bool, timing: Timing,
              mytriton_extra: dict | None = None) -> list[tuple[str, str, Row]]:
    """Every size and form of ``args``: printed, recorded (``Results``), and returned."""
    import torch

    record = Results("matmul_forms", args)
    precision = f32_precision(args)
    dtype = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}[args.dtype]
    tiles = parse_config(args.config)
    modules: dict[tuple[str, str], Any] = {}

    def kernel(form: Form, side: str, again: int = 0) -> Any:
        key = (form.stem, side, again)
        if key not in modules:
            suffix = f"_{again}" if again else ""
            load = load_copy if again else load_module  # a copy: NVRTC builds it again (load_copy)
            modules[key] = (load(form.path(), f"mytriton_forms_{form.stem}{suffix}") if side == "mytriton"
                            else load_as_triton("", f"forms_{form.stem}{suffix}", path=form.path()))
        return kernel_of(form, modules[key])

    label = args.dtype + (f" ({precision})" if precision else "")
    print(f"{label}, config {args.config}, {args.num_warps} warps, {args.num_stages} stages, {num_sms} SMs; "
          f"ratio = Triton ms / mytriton ms (target {TARGET})", flush=True)
    done = []
    for size_text in args.sizes:
        M, N, K = parse_size(size_text)
        size = f"{M}x{N}x{K}"
        p = make_problem(M, N, K, dtype, device, tiles, args.num_warps, args.num_stages, num_sms, args.split_k)
        reference = p.a.float() @ p.b.float()
        print(f"\n{size}\nform         mytriton ms  TFLOP/s  triton TFLOP/s  ratio", flush=True)
        for name in args.forms:
            form = FORMS[name]
            why = refused(form, p, args.dtype)
            if why is not None:
                print(f"{name:<12} skipped: {why}", flush=True)
                continue
            sides = []
            launches = [("mytriton", mytriton_extra or {"backend": "cuda"})] + ([("triton", {})] if triton_side else [])
            for side, extra in launches:
                try:
                    sides.append((side, kernel(form, side), extra))
                except Exception as error:  # the file does not load: as a failed row
                    sides.append((side, _Unloadable(error), extra))
            row = measure(name, form, p, reference, tolerance(args.dtype, precision, form.out), sides, timing)
            if args.first_calls > 1:
                more_first_calls(row, form, p, launches, kernel, timing, args.first_calls)
            flops = flops_of(form, p)
            if "mytriton" in row.results:
                print(f"{name:<12} {timing_columns(flops, row.results)}", flush=True)
            if row.firsts:
                print(first_call_line(row.firsts.get("mytriton", float("nan")), row.firsts.get("triton")), flush=True)
            mine, theirs = row.results.get("mytriton"), row.results.get("triton")
            record.add(f"{name} {label} {size} {args.config}", "ms", mine, theirs,
                       tflops=flops / mine / 1e9 if mine else None, triton_tflops=flops / theirs / 1e9 if theirs else None,
                       ratio=row.ratio, first_call_s=row.firsts.get("mytriton"),
                       triton_first_call_s=row.firsts.get("triton"), failures=row.failures or None, form=name,
                       file=f"tests/triton_style/{form.stem}.py", kernel=form.kernel, size=size, config=args.config,
                       num_warps=args.num_warps, num_stages=args.num_stages, **row.info)
            done.append((name, size, row))

    print(f"\nsummary ({label}, {args.config}): form, size, Triton ms / mytriton ms, staged / pipelined / wgmma")
    for name, size, row in done:
        flags = "/".join("yes" if row.info.get(k) else "no" for k in ("staged", "pipelined", "wgmma")) \
            if "remarks" in row.info else "-"
        ratio = row.ratio
        verdict = ("FAILED: " + ", ".join(row.failures)) if row.failures else \
            "-" if ratio is None else f"{ratio:.2f}" + ("" if ratio >= TARGET else f" (below {TARGET})")
        print(f"  {name:<12} {size:<16} {verdict:<22} {flags}", flush=True)
    return done


class _Unloadable:
    """A kernel file that did not load: its launch raises the import's error."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    def __getitem__(self, grid: Any) -> Any:
        raise self.error


def f32_precision(args: argparse.Namespace) -> str | None:
    """tl.dot's precision for f32 operands (None for f16 and bf16): TF32 unless --precision ieee."""
    return (args.precision or "tf32") if args.dtype == "f32" else None


def main() -> None:
    args = parse_args()
    cold_caches()
    precision = f32_precision(args)
    if precision is not None:
        # tl.dot's precision for f32 operands where the call names none, in both compilers.
        os.environ["MYTRITON_F32_DEFAULT"] = precision
        os.environ["TRITON_F32_DEFAULT"] = precision

    import torch

    torch.backends.cuda.matmul.allow_tf32 = False  # the reference is f32
    have_triton = triton_available()
    if have_triton:
        import triton

        if hasattr(triton, "set_allocator"):
            # Tensor descriptors: Triton writes the TMA descriptors to global scratch memory it asks
            # the host for (mytriton needs none).
            triton.set_allocator(lambda size, alignment, stream: torch.empty(size, device="cuda", dtype=torch.int8))
    num_sms = torch.cuda.get_device_properties(0).multi_processor_count
    run_forms(args, "cuda", num_sms, have_triton, Timing(repeat=args.repeat))


if __name__ == "__main__":
    main()
