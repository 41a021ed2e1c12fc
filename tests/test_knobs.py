"""Triton's environment variables mean here what they mean in Triton, where
mytriton has the same knob; mytriton's own variable wins where both are set
(docs/cli.md, "Environment variables")."""
from __future__ import annotations

import os

import numpy as np

from mytriton import user_cache

ADD = """
@mytriton.jit
def add_one(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1.0, mask=offs < n)
"""

TUNED = """
@mytriton.autotune(configs=[mytriton.Config({"BLOCK": 32}), mytriton.Config({"BLOCK": 64})], key=["n"])
@mytriton.jit
def add_one(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1.0, mask=offs < n)
"""


def test_triton_cache_dir_places_the_cache_and_mytritons_variable_wins(monkeypatch, tmp_path):
    monkeypatch.delenv("MYTRITON_CACHE_DIR", raising=False)
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    assert user_cache.cache_root() == tmp_path / "triton"
    monkeypatch.setenv("MYTRITON_CACHE_DIR", str(tmp_path / "mine"))
    assert user_cache.cache_root() == tmp_path / "mine"


def test_triton_always_compile_makes_every_build_run_nvcc(monkeypatch):
    monkeypatch.delenv("MYTRITON_ALWAYS_COMPILE", raising=False)
    monkeypatch.setenv("TRITON_ALWAYS_COMPILE", "0")
    assert not user_cache.always_compile()
    monkeypatch.setenv("TRITON_ALWAYS_COMPILE", "1")
    assert user_cache.always_compile()


def test_triton_kernel_dump_dumps_each_jit_specialisation_into_triton_dump_dir(kernel_module, monkeypatch,
                                                                                tmp_path, rng):
    monkeypatch.delenv("MYTRITON_DUMP_DIR", raising=False)
    monkeypatch.setenv("TRITON_DUMP_DIR", str(tmp_path / "dump"))
    x = rng.standard_normal(50).astype(np.float32)
    out = np.zeros_like(x)
    kernel_module(ADD).add_one[(1,)](x, out, 50, BLOCK=64, backend="interp")
    assert not (tmp_path / "dump").exists()  # TRITON_DUMP_DIR alone dumps nothing, as in Triton
    monkeypatch.setenv("TRITON_KERNEL_DUMP", "1")
    kernel_module(ADD).add_one[(1,)](x, out, 50, BLOCK=64, backend="interp")
    (folder,) = os.listdir(tmp_path / "dump")
    assert folder.startswith("add_one-") and "06-cuda.cu" in os.listdir(tmp_path / "dump" / folder)
    np.testing.assert_array_equal(out, x + 1.0)


def test_triton_print_autotuning_prints_the_chosen_config(kernel_module, monkeypatch, capsys, rng):
    monkeypatch.setenv("TRITON_PRINT_AUTOTUNING", "1")
    x = rng.standard_normal(100).astype(np.float32)
    out = np.zeros_like(x)
    kernel_module(TUNED).add_one[lambda meta: (-(-100 // meta["BLOCK"]),)](x, out, 100, backend="interp")
    printed = capsys.readouterr().out
    assert "autotuning for function add_one" in printed and "best config selected: BLOCK: 32" in printed
    np.testing.assert_array_equal(out, x + 1.0)


def headers(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("// -----// IR Dump")]


def launch_add(kernel_module, rng, block: int = 64) -> None:
    x = rng.standard_normal(50).astype(np.float32)
    out = np.zeros_like(x)
    kernel_module(ADD).add_one[(-(-50 // block),)](x, out, 50, BLOCK=block, backend="interp")
    np.testing.assert_array_equal(out, x + 1.0)


def test_print_ir_prints_the_named_passes_of_each_kernel_the_jit_compiles(kernel_module, monkeypatch, capsys,
                                                                          rng):
    monkeypatch.setenv("MYTRITON_PRINT_IR", "cse,layouts")
    launch_add(kernel_module, rng)
    assert headers(capsys.readouterr().err) == ["// -----// IR Dump After cse //----- //",
                                                "// -----// IR Dump After layouts //----- //"]


def test_mlir_enable_dump_prints_after_every_pass(kernel_module, monkeypatch, capsys, rng):
    monkeypatch.delenv("MYTRITON_PRINT_IR", raising=False)
    monkeypatch.setenv("MLIR_ENABLE_DUMP", "1")  # Triton's spelling
    launch_add(kernel_module, rng)
    printed = headers(capsys.readouterr().err)
    assert "// -----// IR Dump After fold //----- //" in printed and len(printed) > 5


def test_print_ir_with_an_unknown_pass_is_an_error_naming_the_nearest(kernel_module, monkeypatch, rng):
    import pytest

    from mytriton.diagnostics import CompileError

    monkeypatch.setenv("MYTRITON_PRINT_IR", "csee")
    with pytest.raises(CompileError, match="MYTRITON_PRINT_IR: unknown pass 'csee'; did you mean 'cse'"):
        launch_add(kernel_module, rng)


def test_a_triton_knob_mytriton_lacks_is_warned_of_once_naming_what_to_use(kernel_module, monkeypatch, rng):
    import warnings

    from mytriton import knobs

    monkeypatch.setattr(knobs, "_warned", set())
    monkeypatch.setenv("TRITON_F32_DEFAULT", "ieee")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        launch_add(kernel_module, rng, block=32)
        launch_add(kernel_module, rng, block=16)  # another compile: no second warning
    messages = [str(w.message) for w in caught if "TRITON_F32_DEFAULT" in str(w.message)]
    assert messages == ["TRITON_F32_DEFAULT is set, but mytriton has no such knob and ignores it: "
                        "set MYTRITON_F32_DEFAULT (read at every launch) instead"]


def test_a_triton_knob_set_to_what_mytriton_does_is_not_warned_of(kernel_module, monkeypatch, rng):
    import warnings

    from mytriton import knobs

    monkeypatch.setattr(knobs, "_warned", set())
    monkeypatch.setenv("TRITON_DEFAULT_FP_FUSION", "1")  # nvcc fuses multiplies and adds here too
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        launch_add(kernel_module, rng, block=8)
    assert not [w for w in caught if "TRITON_DEFAULT_FP_FUSION" in str(w.message)]
