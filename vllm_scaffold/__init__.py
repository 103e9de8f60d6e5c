"""vllm-scaffold: generate out-of-tree vLLM plugin packages for every extension seam."""

__version__ = "0.1.0"

# What a plugin's tests need besides vLLM: the pytest plugin built from harness/ in this repository.
HARNESS_REQUIREMENT = "vllm-scaffold-testing~=0.1.0"
