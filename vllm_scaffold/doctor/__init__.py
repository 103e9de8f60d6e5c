"""`vllm-scaffold doctor`: find the ways a vLLM plugin package breaks silently, against the installed vLLM.

Static checks read the package (pyproject entry points, the [tool.vllm-scaffold] manifest, the source as an
AST) and the installed vLLM's sources without importing vLLM. The live probe installs the package privately,
loads it in a fresh interpreter where it is the only added plugin, and reports what it registers.
`vllm_scaffold.doctor.runner.diagnose` is the entry point.
"""
