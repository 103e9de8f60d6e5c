"""my_kv: a vLLM KV connector that keeps prompt-prefix KV blocks on local disk.

Imports nothing: vLLM imports `connector` through the name `registration.register()` gives it, and the
kernel module stays importable where vLLM is absent.
"""
