"""`doctor --vllm`: a plugin checked against a vLLM release's API index instead of an installed vLLM
(`check`), the signature rules shared with the installed checks (`signatures`), and which overrides vLLM
really calls (`override_callers`).
"""
