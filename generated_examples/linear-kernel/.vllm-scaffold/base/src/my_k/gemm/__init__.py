"""my_k: an int8 W8A8 linear kernel for vLLM's kernel selector, with a Triton GEMM.

Imports nothing, so the kernel module can be used where vLLM is absent. vLLM reaches the kernel class through
`my_k.gemm.linear_kernel:register`, which the package's general plugin calls in every process.
"""
