"""Host tensor descriptors: Triton's ``triton.tools.tensor_descriptor.TensorDescriptor``.

A kernel argument that describes a tensor by its base, shape, strides and
the block each load or store moves, as Triton 3.x's tutorials (fused
attention, persistent matmul) pass Q, K, V and O on Hopper. The kernel
sees a descriptor, as ``tl.make_tensor_descriptor`` makes one
(``desc.load([i, 0])``, ``isinstance(desc, tl.tensor_descriptor)``); the
launch passes its parts (``DescriptorParam.parts``): the base, the shape,
the strides but the last. The rules are Triton's: the last stride is 1, the
base is 16-byte aligned and every other stride spans a multiple of 16 bytes
(what the compiler may then assume of them). ``block_shape`` may change
until the launch reads it (an autotuner config's ``pre_hook`` sets it).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mytriton.diagnostics import CompileError, printable
from mytriton.types import I32, I64, DescriptorParam

MAX_RANK = 5  # Triton's (TMA's) limit
_PADDINGS = ("zero", "nan")
_INT_ONLY = {int}
_ALIGNED_POINTER = (2,)  # arguments.specialisation_codes: specialised on alignment


@dataclass
class TensorDescriptor:
    base: Any
    shape: list[int]
    strides: list[int]
    block_shape: list[int]
    padding: str = "zero"

    def __post_init__(self) -> None:
        self.check()

    @staticmethod
    def from_tensor(tensor: Any, block_shape: list[int], padding: str = "zero") -> "TensorDescriptor":
        """The descriptor of all of ``tensor`` (a torch tensor, or a NumPy or CuPy array)."""
        if hasattr(tensor, "stride") and callable(tensor.stride):
            strides = list(tensor.stride())
        else:
            itemsize = tensor.dtype.itemsize
            strides = [s // itemsize for s in tensor.strides]
        return TensorDescriptor(tensor, list(tensor.shape), strides, list(block_shape), padding)

    def check(self) -> None:
        """Triton's rules for a host descriptor, each a CompileError naming what breaks it."""
        if self._plain():
            return
        rank = len(self.shape)
        if not 1 <= rank <= MAX_RANK:
            raise CompileError(f"a TensorDescriptor has 1 to {MAX_RANK} dimensions, got shape {self.shape!r}")
        for what in ("strides", "block_shape"):
            if len(getattr(self, what)) != rank:
                raise CompileError(f"a TensorDescriptor's {what} {getattr(self, what)!r} does not match its "
                                   f"shape {self.shape!r}")
        for what in ("shape", "strides", "block_shape"):
            if not all(type(v) is int or _is_index(v) for v in getattr(self, what)):
                raise CompileError(f"a TensorDescriptor's {what} must be integers, got {getattr(self, what)!r}")
        if int(self.strides[-1]) != 1:
            raise CompileError(f"a TensorDescriptor's last dimension must be contiguous (stride 1), got strides "
                               f"{self.strides!r}")
        if self.padding not in _PADDINGS:
            raise CompileError(f"a TensorDescriptor's padding is 'zero' or 'nan', got {printable(repr(self.padding))}")

    def param_type(self, name: str) -> DescriptorParam:
        """The kernel parameter type of this descriptor as launched now, its
        alignment checked (the compiler assumes it)."""
        from mytriton.runtime.arguments import address_of, element_type

        self.check()
        element = element_type(self.base, name)
        address = address_of(self.base)
        if address is None or address % 16:
            raise CompileError(f"argument '{name}': a TensorDescriptor's base must be 16-byte aligned")
        misaligned = [s for s in self.strides[:-1] if int(s) * element.nbytes % 16]
        if misaligned:
            raise CompileError(f"argument '{name}': a TensorDescriptor's strides but the last must span multiples "
                               f"of 16 bytes, got strides {self.strides!r} of {element.name}")
        block = tuple(int(b) for b in self.block_shape)
        values = [int(v) for v in (*self.shape, *self.strides)]
        index = I32 if all(-2**31 <= v < 2**31 for v in values) else I64
        return DescriptorParam(element, block, index, self.padding)

    def _plain(self) -> bool:
        """Whether this descriptor keeps the rules with plain ints (the
        launch's quick test; check() says what a failing one breaks)."""
        shape, strides, block = self.shape, self.strides, self.block_shape
        rank = len(shape)
        return (0 < rank <= MAX_RANK and len(strides) == rank == len(block) and strides[-1] == 1
                and self.padding in _PADDINGS and set(map(type, (*shape, *strides, *block))) == _INT_ONLY)

    def launch_key(self) -> tuple | None:
        """What param_type's result depends on, read cheaply for a repeated
        launch (runtime.arguments.coded_launch_key): the base's element type
        and alignment, the block, the strides modulo 16 (their alignment for
        any element size), the padding and whether an index needs 64 bits.
        None where a rule may be broken: the full launch path reports it."""
        from mytriton.runtime.arguments import coded_launch_key

        if not self._plain():
            return None
        key = coded_launch_key((self.base,), _ALIGNED_POINTER, (), ())
        if key is None or not key[0][2]:
            return None
        shape, strides = self.shape, self.strides
        wide = min(*shape, *strides) < -2**31 or max(*shape, *strides) >= 2**31
        return (TensorDescriptor, key[0], tuple(self.block_shape), tuple([s % 16 for s in strides[:-1]]),
                self.padding, wide)

    def parts(self) -> list[Any]:
        """The launch's arguments for this descriptor, in DescriptorParam.parts' order."""
        return [self.base, *(int(v) for v in self.shape), *(int(v) for v in self.strides[:-1])]


def _is_index(value: Any) -> bool:
    """A NumPy or torch integer scalar (a shape read from an array)."""
    try:
        return int(value) == value and not isinstance(value, (float, bool))
    except (TypeError, ValueError):
        return False


def expand_descriptors(values: list[Any]) -> list[Any]:
    """Launch values with each TensorDescriptor replaced by its parts."""
    out: list[Any] = []
    for value in values:
        if isinstance(value, TensorDescriptor):
            out.extend(value.parts())
        else:
            out.append(value)
    return out
