"""Triton's AOT signatures in `-s`: `:16` hints become parameter facts, `:1`
and numbers bind values; nothing in a signature is dropped silently."""
from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import SAMPLES, compile_text
from mytriton.diagnostics import CompileError

ADD = (SAMPLES / "add.py").read_text()


def tree_header(signature: str, **options) -> str:
    return compile_text(ADD, "tree", file="add.py", signature=signature, **options).splitlines()[0]


def test_divisibility_hints_become_parameter_attributes():
    header = tree_header("*fp32:16, *fp32, *fp32:16, i32:16")
    assert "x_ptr: ptr<f32> {divisibility=16}, y_ptr: ptr<f32>, out_ptr: ptr<f32> {divisibility=16}, " \
           "n: i32 {divisibility=16})" in header


def test_an_integer_hinted_eight_is_divisible_by_eight():
    assert "n: i32 {divisibility=8})" in tree_header("*fp32, *fp32, *fp32, i32:8")


def test_a_number_in_a_constexprs_place_binds_it():
    assert "constexpr(BLOCK = 1024)" in tree_header("*fp32, *fp32, *fp32, i32, 1024")


def test_the_bound_value_reaches_the_cuda():
    ssa = compile_text(ADD, "ssa", file="add.py", signature="*fp32, *fp32, *fp32, i32, 1024")
    assert "arange start=0, end=1024" in ssa


def test_an_integer_hinted_one_is_the_constant_one():
    header = tree_header("*fp32, *fp32, *fp32, i32:1")
    assert "out_ptr: ptr<f32>) constexpr(n = 1, BLOCK = 256)" in header


def test_a_number_for_a_runtime_parameter_makes_it_a_constant():
    assert "constexpr(n = 4096, BLOCK = 256)" in tree_header("*fp32, *fp32, *fp32, 4096, 256")


@pytest.mark.parametrize("signature, message", [
    ("*fp32, *fp32, *fp32, i32, i32", "'BLOCK' is a tl.constexpr: the signature gives its value (a number), not the type 'i32'"),
    ("*fp32:4, *fp32, *fp32, i32", "a hint is :16 (divisible by 16) or :1 (equal to 1)"),
    ("*fp32:8, *fp32, *fp32, i32", ":8 is an integer's hint (divisible by 8); a pointer's is :16"),
    ("*fp32:1, *fp32, *fp32, i32", "only an integer can be the constant 1"),
    ("*fp32, *fp32, *fp32, fp32:16", "divisibility is a fact about a pointer or an integer, not f32"),
    ("*fp32, *fp32, i32", "the signature gives 3 entries but 'add_kernel' has 4 runtime parameter(s)"),
])
def test_a_signature_it_cannot_honour_is_an_error(signature, message):
    with pytest.raises(CompileError, match=message.replace("(", r"\(").replace(")", r"\)").replace("*", r"\*")):
        tree_header(signature)


def test_a_signature_value_and_a_define_must_agree():
    with pytest.raises(CompileError, match="'BLOCK' is 512 in the signature and 256 in -D"):
        tree_header("*fp32, *fp32, *fp32, i32, 512", defines={"BLOCK": 256})
    assert "BLOCK = 512" in tree_header("*fp32, *fp32, *fp32, i32, 512", defines={"BLOCK": 512})


def test_the_cli_takes_hints_and_values():
    done = subprocess.run([sys.executable, "-m", "mytriton", "compile", str(SAMPLES / "add.py"), "--emit=ssa",
                           "-s", "*fp32:16, *fp32:16, *fp32:16, i32:16, 1024"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "n: i32 {divisibility=16}) constexpr(BLOCK = 1024)" in done.stdout
