"""What the CUDA back end makes of hold-tiles' decisions (the pass itself:
tests/lit/hold-tiles)."""
from conftest import compile_text, kernel_source

SOFTMAX = kernel_source("""
    @mytriton.jit
    def softmax(x_ptr, out_ptr):
        offs = tl.arange(0, 128)
        x = tl.load(x_ptr + offs)
        e = tl.exp(x - tl.max(x, axis=0))
        tl.store(out_ptr + offs, e / tl.sum(e, axis=0))
""")


def test_an_exp_that_two_statements_read_is_computed_once_into_registers():
    cuda = compile_text(SOFTMAX, "cuda", "softmax.py", signature="*fp32, *fp32")
    assert cuda.count("1.44269504088896341f") == 1  # exp(x) = exp2(x * log2(e)), once an element
    held = cuda.index("held in registers for the statements that read it")
    assert held < cuda.index("// sum") < cuda.index("// store")
