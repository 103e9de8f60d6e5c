"""Test harness for vLLM plugin packages: tiny offline model, private plugin install, engines and servers.

The fixtures live in `vllm_scaffold.testing.plugin`, which pytest loads through the `pytest11` entry point.
"""

from vllm_scaffold.testing.engine import (
    TINY_ENGINE_KWARGS,
    TP2_ENV,
    engine_environment,
    in_process_llm,
    run_python,
)
from vllm_scaffold.testing.server import OpenAIServer
from vllm_scaffold.testing.tiny_model import build_tiny_llama, cached_tiny_llama

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
