"""The TTIR back end: optimised SSA as Triton's own ``tt`` dialect."""
