"""vllm-scaffold: generate out-of-tree vLLM plugin packages for every extension seam."""

__version__ = "0.1.0"
