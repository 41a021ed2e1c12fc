"""``mytriton run``: launch a kernel from a file, for scripts and Makefiles.

The file is a kernel (``.py``), SSA (``.ssa``) or generated CUDA (``.cu``,
whose header names its parameters). Arguments are numbers, ``.npy`` files
or generated arrays (``rand:1000``, ``randn:64x64:f16``, ``zeros:N``,
``ones:N``, ``arange:N``); the grid may be an expression over the scalar
arguments and constexprs (``cdiv(n, BLOCK)``). Each buffer the kernel stores
to, and each generated input, is saved as ``OUT_DIR/NAME.npy``.
"""
from __future__ import annotations

import ast
import functools
import operator
import os
from dataclasses import dataclass
from typing import Any

from mytriton import npy_files, compiler
from mytriton.diagnostics import CompileError, did_you_mean, printable
from mytriton.deep_stack import run_deep
from mytriton.limits import MAX_GENERATED_ELEMENTS, MAX_GRID_TEXT, grid_error
from mytriton.output_files import prepare_directory, replace_in_directory
from mytriton.types import BOOL, F16, F32, F64, I8, I16, I32, I64, U8, U16, U32, U64, PointerType, ScalarType, Type

# NumPy's seeds are unsigned 64-bit integers.
MAX_SEED = 2**64 - 1

_DTYPES = {"f32": F32, "fp32": F32, "f16": F16, "fp16": F16, "f64": F64, "fp64": F64, "i8": I8, "i16": I16,
           "i32": I32, "i64": I64, "u8": U8, "u16": U16, "u32": U32, "u64": U64, "bool": BOOL, "i1": BOOL}
_GENERATORS = ("rand", "randn", "zeros", "ones", "arange")


def _numpy_dtype(t: ScalarType) -> Any:
    import numpy as np

    table = {F32: np.float32, F16: np.float16, F64: np.float64, I8: np.int8, I16: np.int16, I32: np.int32,
             I64: np.int64, U8: np.uint8, U16: np.uint16, U32: np.uint32, U64: np.uint64, BOOL: np.bool_}
    if t not in table:
        raise CompileError(f"'run' cannot make {t} arrays")
    return table[t]


def parse_arg(text: str) -> tuple[str, str]:
    name, sep, spec = text.partition("=")
    if not sep or not name.strip().isidentifier() or not spec.strip():
        raise CompileError(f"--arg expects NAME=SPEC, got '{text}'")
    return name.strip(), spec.strip()


def is_array_spec(spec: str) -> bool:
    return spec.endswith(".npy") or spec.split(":")[0] in _GENERATORS


def scalar_value(name: str, spec: str) -> int | float | bool:
    try:
        value = ast.literal_eval(spec) if len(spec) <= 100 else None
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        value = None
    if not isinstance(value, (int, float, bool)):
        raise CompileError(f"--arg {name}: '{spec}' is not a number, a .npy file or a generator "
                           f"({', '.join(g + ':N' for g in _GENERATORS)})")
    return value


def check_scalar(name: str, value: int | float | bool, t: Type) -> int | float | bool:
    """``value`` as an argument of scalar type ``t``: an integer type takes an
    integer within its range, a float type any number."""
    if isinstance(t, ScalarType) and t.is_int:
        if isinstance(value, float):
            raise CompileError(f"--arg {name}: the parameter is {t}, which takes an integer, got {value!r}")
        low, high = t.int_range
        if not low <= value <= high:
            raise CompileError(f"--arg {name}: {value} is out of range for {t} ({low} to {high})")
    if t == BOOL and value not in (0, 1):
        raise CompileError(f"--arg {name}: the parameter is bool, got {value!r}")
    return value


def parse_shape(name: str, text: str) -> tuple[int, ...]:
    """A generated array's shape, ``N`` or ``NxM...``: non-negative sizes
    whose product is at most MAX_GENERATED_ELEMENTS."""
    parts = text.split("x")
    if len(parts) > 8 or not all(p.isdigit() and len(p) <= 12 for p in parts):
        raise CompileError(f"--arg {name}: bad size '{text}' (use N or NxM with sizes from 0 "
                           f"to {MAX_GENERATED_ELEMENTS})")
    shape = tuple(int(p) for p in parts)
    count = 1
    for d in shape:
        count *= d
    if count > MAX_GENERATED_ELEMENTS:
        raise CompileError(f"--arg {name}: '{text}' is {count} elements; 'run' generates at most "
                           f"{MAX_GENERATED_ELEMENTS}")
    return shape


def make_array(name: str, spec: str, pointee: ScalarType | None, rng: Any) -> tuple[Any, bool]:
    """(array, generated?) for a pointer argument."""
    import numpy as np

    if spec.endswith(".npy"):
        return np.ascontiguousarray(npy_files.load(spec, f"--arg {name}")), False
    kind, *rest = spec.split(":")
    if not rest:
        raise CompileError(f"--arg {name}: '{spec}' needs a size, e.g. {kind}:1024")
    if kind not in _GENERATORS:
        raise CompileError(f"--arg {name}: unknown generator '{kind}' (use {', '.join(_GENERATORS)})")
    if len(rest) > 2:
        raise CompileError(f"--arg {name}: '{spec}' has too many parts (use KIND:SHAPE or KIND:SHAPE:DTYPE)")
    shape = parse_shape(name, rest[0])
    dtype_name = rest[1] if len(rest) > 1 else None
    element = _DTYPES.get(dtype_name) if dtype_name else (pointee or F32)
    if element is None:
        raise CompileError(f"--arg {name}: unknown dtype '{dtype_name}' (use {', '.join(_DTYPES)})")
    dtype = _numpy_dtype(element)
    if kind == "zeros":
        array = np.zeros(shape, dtype)
    elif kind == "ones":
        array = np.ones(shape, dtype)
    elif kind == "arange":
        array = np.arange(int(np.prod(shape))).reshape(shape).astype(dtype)
    elif element == BOOL:
        array = rng.random(shape) < 0.5
    elif element.is_int:
        array = rng.integers(0 if element.unsigned else -100, 100, size=shape).astype(dtype)
    elif kind == "randn":
        array = rng.standard_normal(shape).astype(dtype)
    else:
        array = rng.uniform(-1.0, 1.0, size=shape).astype(dtype)
    return array, True


def unknown_args(specs: dict[str, str], runtime: list[str]) -> None:
    """An --arg naming no runtime parameter is an error (before any missing
    one is), with the nearest parameter name where one is close."""
    unknown = sorted(set(specs) - set(runtime))
    if unknown:
        name = unknown[0]
        raise CompileError(f"--arg {printable(name)}: the kernel has no runtime parameter of that name"
                           f"{did_you_mean(name, runtime)} (parameters: {', '.join(runtime)})")


def hints_from_specs(runtime: list[str], specs: dict[str, str], types: list[Type]) -> list[str]:
    """Each argument's specialisation, as a launch from Python makes it
    (runtime/arguments.py): an array 16-byte aligned (each goes to a fresh
    device buffer, or is NumPy's own), an integer divisible by 16 or 8 said so."""
    from mytriton.runtime.arguments import integer_hint

    hints = []
    for name, t in zip(runtime, types):
        if isinstance(t, PointerType):
            hints.append("16")
        elif isinstance(t, ScalarType) and t.is_int and t != BOOL:
            value = scalar_value(name, specs[name])
            hints.append(integer_hint(value) if isinstance(value, int) and not isinstance(value, bool) else "")
        else:
            hints.append("")
    return hints


def arg_types_from_specs(runtime: list[str], specs: dict[str, str]) -> list[Type]:
    """Runtime types when there is no -s: from the arguments given."""
    unknown_args(specs, runtime)
    types: list[Type] = []
    for name in runtime:
        if name not in specs:
            raise CompileError(f"missing --arg {name}=...")
        spec = specs[name]
        if spec.endswith(".npy"):
            from mytriton.runtime.arguments import element_type

            array, _ = make_array(name, spec, None, None)
            types.append(PointerType(element_type(array, name)))
        elif is_array_spec(spec):
            parts = spec.split(":")
            types.append(PointerType(_DTYPES.get(parts[2], F32) if len(parts) > 2 else F32))
        else:
            value = scalar_value(name, spec)
            types.append(BOOL if isinstance(value, bool) else _int_type(name, value) if isinstance(value, int)
                         else F32)
    return types


def _int_type(name: str, value: int) -> ScalarType:
    """i32, or i64 for an integer beyond i32 (u64 from 2**63), as Triton specialises a Python int."""
    if -2**31 <= value < 2**31:
        return I32
    if -2**63 <= value < 2**63:
        return I64
    if 2**63 <= value < 2**64:
        return U64
    raise CompileError(f"--arg {name}: {value} does not fit i64 or u64")


_GRID_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
             ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod}
_GRID_FUNCS = {"cdiv": lambda a, b: -(-a // b), "max": max, "min": min}
_GRID_ARITY = {"cdiv": (2, 2), "max": (2, 8), "min": (2, 8)}
# Intermediate values beyond this cannot make a valid grid; bounding them
# keeps a product of products from growing without end.
_GRID_VALUE_BOUND = 2**128


def eval_grid(text: str, names: dict[str, Any]) -> tuple[int, ...]:
    """The grid, one to three non-negative integers within CUDA's limits,
    from an expression over integers and the integer arguments."""
    def fail(message: str) -> CompileError:
        return CompileError(f"--grid '{text}': {message}")

    def value(node: ast.AST) -> int:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            result = node.value
        elif isinstance(node, ast.Name) and node.id in names and type(names[node.id]) is int:
            result = names[node.id]
        elif isinstance(node, ast.BinOp) and type(node.op) in _GRID_OPS:
            left, right = value(node.left), value(node.right)
            if right == 0 and type(node.op) in (ast.FloorDiv, ast.Mod):
                raise fail(f"division by zero in '{ast.unparse(node)}'")
            result = _GRID_OPS[type(node.op)](left, right)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _GRID_FUNCS \
                and not node.keywords:
            low, high = _GRID_ARITY[node.func.id]
            if not low <= len(node.args) <= high:
                raise fail(f"{node.func.id} takes {low if low == high else f'{low} to {high}'} "
                           f"arguments, got {len(node.args)}")
            args = [value(a) for a in node.args]
            if node.func.id == "cdiv" and args[1] == 0:
                raise fail(f"division by zero in '{ast.unparse(node)}'")
            result = _GRID_FUNCS[node.func.id](*args)
        else:
            raise fail(f"cannot evaluate '{ast.unparse(node)}' "
                       "(integers, integer arguments, + - * // %, cdiv, min, max)")
        if abs(result) > _GRID_VALUE_BOUND:
            raise fail(f"'{ast.unparse(node)}' is far beyond any grid size")
        return result

    if len(text) > MAX_GRID_TEXT:
        raise CompileError(f"--grid: the expression is {len(text)} characters long (at most {MAX_GRID_TEXT})")
    try:
        tree = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        raise CompileError(f"--grid '{text}' is not an expression") from None
    items = tree.elts if isinstance(tree, ast.Tuple) else [tree]
    if not 1 <= len(items) <= 3:
        raise CompileError(f"--grid has one to three dimensions, got {len(items)}")
    try:
        grid = tuple(value(item) for item in items)
    except RecursionError:
        raise fail("the expression is nested too deeply") from None
    for axis, size in enumerate(grid):
        if size < 0:
            raise fail(f"axis {axis} has {size} programs")
    problem = grid_error(grid)
    if problem:
        raise fail(problem)
    return grid  # as many axes as written: the interpreter names programs by them


@dataclass
class Prepared:
    """A launch read from the command line: the kernel (None for a ``.cu``
    file, whose source is then ``cuda_source``), its parameters, the argument
    values, the grid, the buffers it stores to and the generated inputs."""

    file: str
    kernel: Any
    cuda_source: str | None
    params: list[tuple[str, Type]]
    values: dict[str, Any]
    generated: list[str]
    stores: list[str]
    grid: tuple[int, ...]


def prepare_run(path: str, grid_text: str, arg_specs: tuple[str, ...], options: compiler.Options,
                out_dir: str | None, seed: int) -> Prepared:
    """Read and compile (on the deep stack, deep_stack.run_deep) the file,
    make the arguments and work out the grid: all of ``run`` before the launch."""
    import numpy as np

    from mytriton.cli import read_input
    from mytriton.ir.analysis import stored_params

    text, file = read_input(path)
    specs = dict(parse_arg(a) for a in arg_specs)
    kernel = None
    cuda_source = None
    if path.endswith(".cu"):
        from mytriton.backends.cuda.emitter import read_header
        from mytriton.ir.text_common import parse_type

        header = read_header(text, file)
        params = [(name, parse_type(t)) for name, t in header["params"]]
        constexprs = dict(header.get("constexprs", {}))
        stores = list(header["stores"])
        cuda_source = text
    else:
        if path.endswith(".ssa"):
            kernel = run_deep(lambda: compiler.verify(compiler.read_ssa(text, file)))
        else:
            if options.signature is None:
                from mytriton.frontend.stages import kernel_params, load_kernel
                from mytriton.runtime.arguments import signature_of

                module, entry = run_deep(load_kernel, text, file, options.kernel)
                runtime, _, _ = kernel_params(module, entry)
                types = arg_types_from_specs(runtime, specs)
                options.signature = signature_of(types, hints_from_specs(runtime, specs, types))
            kernel = run_deep(compiler.source_to_ssa, text, file, options)
        params = [(p.name, p.type) for p in kernel.params]
        constexprs = dict(kernel.constexprs)
        stores = stored_params(kernel)
    unknown_args(specs, [name for name, _ in params])
    if out_dir is not None and os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise CompileError(f"--out-dir {out_dir}: exists and is not a directory")
    if not 0 <= seed <= MAX_SEED:
        raise CompileError(f"--seed must be from 0 to {MAX_SEED}, got {seed}")
    rng = np.random.default_rng(seed)
    values: dict[str, Any] = {}
    generated: list[str] = []
    for name, t in params:
        if name not in specs:
            raise CompileError(f"missing --arg {name}=...")
        if isinstance(t, PointerType):
            values[name], made = make_array(name, specs[name], t.pointee, rng)
            if made:
                generated.append(name)
        else:
            values[name] = check_scalar(name, scalar_value(name, specs[name]), t)
    grid = eval_grid(grid_text, {**constexprs, **values})
    return Prepared(file, kernel, cuda_source, params, values, generated, stores, grid)


def run_file(path: str, grid_text: str, arg_specs: tuple[str, ...], options: compiler.Options,
             backend: str | None, out_dir: str, seed: int, expects: tuple[str, ...]) -> list[str]:
    """Compile (on the deep stack, deep_stack.run_deep) and launch on the
    caller's thread, which then owns the CUDA context it pushes."""
    import numpy as np

    from mytriton.runtime.jit import select_backend

    run = prepare_run(path, grid_text, arg_specs, options, out_dir, seed)
    kernel, cuda_source, params, values = run.kernel, run.cuda_source, run.params, run.values
    chosen = select_backend(backend)
    if chosen == "cuda":
        from mytriton.runtime.cuda_driver import CudaKernel

        without_tma = None
        if cuda_source is None:
            if not kernel.laid_out:
                # A launch whose values no tensor map describes runs this (as a @jit launch does).
                without_tma = functools.partial(run_deep, compiler.cuda_without_tma, compiler.print_ssa(kernel),
                                                run.file, options)
            # Staged and laid out here unless the .ssa file already is.
            cuda_source = run_deep(lambda: compiler.to_cuda(kernel, options))
        from mytriton.runtime import placement

        token = placement.FROM_COMMAND_LINE.set(True)
        try:
            CudaKernel(cuda_source, options.arch, run.file, without_tma=without_tma).launch(
                run.grid, [values[n] for n, _ in params])
        finally:
            placement.FROM_COMMAND_LINE.reset(token)
    else:
        if kernel is None:
            raise CompileError("a .cu file runs only on the GPU; run the .ssa or the kernel with the interpreter")
        from mytriton.backends.interp import run_kernel

        run_kernel(kernel, run.grid, [values[n] for n, _ in params])
    lines = []
    prepare_directory(out_dir, "--out-dir")
    for name in [n for n, _ in params if n in run.stores or n in run.generated]:
        # Atomically, replacing (never following) whatever has the name there.
        target = replace_in_directory(out_dir, f"{name}.npy",
                                      lambda handle, array=values[name]: np.save(handle, array))
        lines.append(f"wrote {target}")
    for expect in expects:
        name, reference = parse_arg(expect)
        if name not in values:
            raise CompileError(f"--expect {name}: no such buffer")
        lines.append(check_expected(name, values[name], reference))
    return lines


def check_expected(name: str, actual: Any, reference: str) -> str:
    import numpy as np

    expected = npy_files.load(reference, f"--expect {name}")
    if expected.shape != actual.shape:
        raise CompileError(f"{name} has shape {actual.shape} but {reference} has {expected.shape}")
    if np.issubdtype(actual.dtype, np.floating):
        ok = np.allclose(actual, expected, rtol=1e-5, atol=1e-6, equal_nan=True)
    else:
        ok = np.array_equal(actual, expected)
    if not ok:
        diff = np.abs(actual.astype(np.float64) - expected.astype(np.float64))
        raise CompileError(f"{name} does not match {reference}: {int(np.sum(diff > 1e-6))} element(s) differ, "
                           f"max difference {float(np.max(diff)):.3g}")
    return f"{name} matches {reference}"
