"""Host-side tools, at Triton's paths (``triton.tools.X`` is ``mytriton.tools.X``):
``tensor_descriptor``, the host ``TensorDescriptor`` a kernel argument may be."""
