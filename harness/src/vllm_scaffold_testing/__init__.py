"""Test harness for vLLM plugin packages: tiny offline model, private plugin install, engines and servers.

The fixtures live in `vllm_scaffold_testing.plugin`, which pytest loads through the `pytest11` entry point.
It is its own distribution, `vllm-scaffold-testing`, so a plugin's test environment carries pytest and
these modules, not the generator's command-line stack.
"""

__version__ = "0.1.0"

from vllm_scaffold_testing.engine import (
    TINY_ENGINE_KWARGS,
    TP2_ENV,
    engine_environment,
    in_process_llm,
    run_python,
)
from vllm_scaffold_testing.server import OpenAIServer
from vllm_scaffold_testing.tiny_model import build_tiny_llama, cached_tiny_llama

__all__ = [
    "TINY_ENGINE_KWARGS",
    "TP2_ENV",
    "OpenAIServer",
    "build_tiny_llama",
    "cached_tiny_llama",
    "engine_environment",
    "in_process_llm",
    "run_python",
]
