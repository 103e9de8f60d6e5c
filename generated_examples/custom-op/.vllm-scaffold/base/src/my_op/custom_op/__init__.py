"""my_op: a Triton replacement for vLLM's in-tree `SiluAndMul`, registered from my_op's general plugin.

Imports nothing, so the kernel module and its tests load where vLLM is absent.
"""
