"""vllm-scaffold: generate out-of-tree vLLM plugin packages for every extension seam."""

__version__ = "0.1.0"

# The vLLM releases whose seams the templates are written against (checked against 0.32.0's source).
VLLM_RANGE = ">=0.32.0,<0.33"
