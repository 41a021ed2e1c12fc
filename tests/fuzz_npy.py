"""Corrupted .npy files for ``mytriton run``'s reader (mytriton/npy_files.py):
a valid file of a random array (dtype, shape, order), then damaged the ways
files get damaged or forged: cut short or extended, bytes flipped anywhere,
the header's fields rewritten (a shape of 10**18 elements, a negative or
non-integer dimension, an object or structured dtype, a fortran_order that
is not a bool), its length field or version bytes changed. The property:
the reader returns what NumPy reads from the same bytes, or refuses with an
error naming the option and the file; it never raises anything else and
never allocates more than the file holds.

``generate(seed)`` is case ``seed`` (tools/fuzz.py); ``cases()`` is a
hypothesis strategy of them.
"""
from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

import numpy as np

from mytriton.diagnostics import CompileError

from fuzz_kernels import HypothesisChooser, RandomChooser

DTYPES = ("<f4", "<f2", "<f8", "<i4", "<i8", "|u1", "|b1", ">f4", "<u2")
FORGED_FIELDS = (
    "'shape': (1000000000000000000,)", "'shape': (-1,)", "'shape': (2.5,)", "'shape': (4, 1000000000000)",
    "'shape': 'x'", "'shape': ()", "'descr': '|O'", "'descr': '<U4'", "'descr': [('a', '<f4'), ('b', '<i4')]",
    "'descr': 'nonsense'", "'descr': '<f4'", "'fortran_order': 2", "'fortran_order': True",
)


@dataclass
class NpyCase:
    data: bytes
    how: str

    def __repr__(self) -> str:
        return f"NpyCase({self.how}, {len(self.data)} bytes)"


def _valid(ch: Any) -> bytes:
    rank = ch.integer(0, 3)
    shape = tuple(ch.integer(0, 5) for _ in range(rank))
    values = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape) - 3
    array = values.astype(np.dtype(ch.choice(DTYPES)))
    if ch.boolean():
        array = np.asfortranarray(array)
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def draw_case(ch: Any) -> NpyCase:
    data = _valid(ch)
    header_end = data.index(b"\n") + 1
    how = ch.choice(("truncate", "extend", "flip", "flip header", "forge field", "length field", "version"))
    if how == "truncate":
        data = data[:ch.integer(0, len(data) - 1)]
    elif how == "extend":
        data += bytes(ch.integer(1, 64))
    elif how in ("flip", "flip header"):
        for _ in range(ch.integer(1, 4)):
            at = ch.integer(0, (header_end if how == "flip header" else len(data)) - 1)
            data = data[:at] + bytes([data[at] ^ ch.integer(1, 255)]) + data[at + 1:]
    elif how == "forge field":
        header = data[:header_end].decode("latin-1")
        field = ch.choice(FORGED_FIELDS)
        key = field.split(":")[0]
        start = header.index(key)
        end = header.index(", '", start) if ", '" in header[start:] else header.index("}", start)
        forged = header[:start] + field + header[end:]
        length = len(forged) - 10  # the magic, version and length field take 10 bytes
        data = forged[:8].encode("latin-1") + length.to_bytes(2, "little") + forged[10:].encode("latin-1") \
            + data[header_end:]
    elif how == "length field":
        data = data[:8] + ch.integer(0, 65535).to_bytes(2, "little") + data[10:]
    else:
        data = data[:6] + bytes([ch.integer(0, 4), ch.integer(0, 2)]) + data[8:]
    return NpyCase(data, how)


def generate(seed: int) -> NpyCase:
    return draw_case(RandomChooser(seed))


def cases() -> Any:
    from hypothesis import strategies as st

    @st.composite
    def strategy(draw: Any) -> NpyCase:
        return draw_case(HypothesisChooser(draw))

    return strategy()


def check(case: NpyCase, path: Any) -> None:
    """``path`` (a file the check may write) holds ``case``'s bytes, then is read."""
    from mytriton.npy_files import load

    path.write_bytes(case.data)
    try:
        array = load(str(path), "--arg x")
    except CompileError as err:
        assert err.message.startswith(f"--arg x: cannot load {path}: "), err.message
        return
    assert array.nbytes <= len(case.data), f"{array.nbytes} bytes from a file of {len(case.data)}"
    # The header agreed with the file's size: NumPy reads no more than it holds either.
    expected = np.load(str(path))
    assert array.dtype == expected.dtype and array.shape == expected.shape
    assert array.tobytes() == expected.tobytes(), "the data differs from what NumPy reads"
