"""my_attn: the CUSTOM attention backend of my_attn (paged KV cache, Triton kernels).

Imports nothing, so the kernel tests can import `my_attn.attention.kernels` where vLLM is absent.
"""
