"""my_offload: a vLLM KV offloading spec that keeps prompt-prefix KV blocks in a bounded host-memory store.

Imports nothing: vLLM imports `spec` through the name `registration.register()` gives it, the store's policy
(`store`) imports only the standard library and the kernel module only torch and triton.
"""
