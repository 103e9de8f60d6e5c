"""vLLM plugin: my_offload

Everything vLLM loads from this package is named in pyproject.toml: entry points under
[project.entry-points] and, per component, how to turn it on under [tool.vllm-scaffold].
"""
