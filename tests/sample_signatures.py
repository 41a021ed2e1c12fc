"""Runtime parameter types of the samples whose parameters are not all *fp32
pointers and i32 scalars (the defaults); samples/Makefile gives the same.
Shared by conftest.py and the mutation fuzzer (which tools/ imports without
pytest)."""

SAMPLE_SIGNATURES = {
    "leaky_relu": "*fp32, *fp32, i32, fp32",
    "two_carried": "*fp32, *fp32, *i32, i32, i32",
    "ragged_rows": "*fp32, *i32, *fp32",
}
