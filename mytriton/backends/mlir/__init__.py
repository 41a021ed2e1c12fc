"""MLIR-family back ends: ``emitter.py`` writes upstream dialects (func, gpu,
arith, math, scf, memref, vector); ``text.py`` holds the printing helpers a
second MLIR-family emitter (Triton's TTIR) can share; ``ops.py`` maps each
SSA op to the MLIR that computes it."""
