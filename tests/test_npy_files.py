"""The .npy files `mytriton run` reads: a file loads as np.load loads it, or
is refused with an error naming the option and the file; a header is checked
against the bytes that follow it before anything is allocated."""
from __future__ import annotations

import io
import time

import numpy as np
import pytest
from numpy.lib import format as npy

from mytriton.diagnostics import CompileError
from mytriton.npy_files import load


def npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def test_a_header_claiming_more_data_than_the_file_holds_is_refused_before_allocating(tmp_path):
    path = tmp_path / "huge.npy"
    with open(path, "wb") as handle:
        npy.write_array_header_1_0(handle, {"descr": "<f4", "fortran_order": False, "shape": (10**12, 10**6)})
        handle.write(bytes(64))
    start = time.monotonic()
    with pytest.raises(CompileError, match=r"--arg x: cannot load .*huge\.npy: its header says 10{18} elements"):
        load(str(path), "--arg x")
    assert time.monotonic() - start < 1


def test_an_object_array_is_refused_not_unpickled(tmp_path):
    path = tmp_path / "objects.npy"
    np.save(path, np.array([1, "a"], dtype=object), allow_pickle=True)
    with pytest.raises(CompileError, match="Python objects"):
        load(str(path), "--arg x")


@pytest.mark.parametrize("array", [np.arange(12, dtype=np.float32).reshape(3, 4),
                                   np.asfortranarray(np.arange(12, dtype=np.int16).reshape(3, 4)),
                                   np.zeros((0, 5), np.float64), np.float32(2.5)], ids=["c", "fortran", "empty", "0-d"])
def test_a_whole_file_loads_as_numpy_loads_it(tmp_path, array):
    path = tmp_path / "a.npy"
    np.save(path, array)
    got = load(str(path), "--arg x")
    assert got.dtype == array.dtype and got.shape == array.shape
    np.testing.assert_array_equal(got, np.load(path))


def test_every_truncation_and_every_corrupted_header_byte_loads_or_is_refused(tmp_path):
    whole = npy_bytes(np.arange(6, dtype=np.float32).reshape(2, 3))
    header_end = whole.index(b"\n") + 1
    variants = [whole[:n] for n in range(len(whole))]
    variants += [whole[:i] + bytes([whole[i] ^ flip]) + whole[i + 1:] for i in range(header_end)
                 for flip in (0x01, 0x20, 0xff)]
    path = tmp_path / "v.npy"
    for data in variants:
        path.write_bytes(data)
        try:
            got = load(str(path), "--arg x")
        except CompileError as err:
            assert err.message.startswith("--arg x: cannot load "), err.message
            continue
        np.testing.assert_array_equal(got, np.load(path))
