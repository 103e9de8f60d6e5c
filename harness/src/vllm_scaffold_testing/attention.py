"""Routing the CPU engine to an attention backend under test: the `cpu_attention_override` fixture.

The CPU platform answers CPU_ATTN whatever attention backend is selected (`--attention-backend` is ignored
there), but it resolves CPU_ATTN through vLLM's override registry. Overriding CPU_ATTN therefore sends a CPU
engine to another backend class. That is a testing device only: a plugin doing it in production would
hijack every CPU engine of the environment.

- In the test process (in-process engines, `VLLM_ENABLE_V1_MULTIPROCESSING=0`): `register_backend(CPU_ATTN,
  path)` plus a clear of vLLM's per-process backend-selection cache; both undone after the test.
- In engine subprocesses (multiprocessing, tensor parallelism): the environment `route()` returns names the
  class in VLLM_SCAFFOLD_CPU_ATTN_OVERRIDE and puts on PYTHONPATH a metadata-only distribution whose
  `vllm.general_plugins` entry point applies the same override in every process of that engine.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from vllm_scaffold_testing.engine import entry_point_site

OVERRIDE_ENV = "VLLM_SCAFFOLD_CPU_ATTN_OVERRIDE"
_PLUGIN = "vllm_scaffold_cpu_attn_override"


def override_cpu_attention(class_path: str) -> None:
    """Makes CPU_ATTN resolve to `class_path` in this process, for engines built from now on."""
    from vllm.v1.attention.backends.registry import AttentionBackendEnum, register_backend
    from vllm.v1.attention.selector import _cached_get_attn_backend

    register_backend(AttentionBackendEnum.CPU_ATTN, class_path)
    _cached_get_attn_backend.cache_clear()


def clear_cpu_attention_override() -> None:
    from vllm.v1.attention.backends.registry import AttentionBackendEnum
    from vllm.v1.attention.selector import _cached_get_attn_backend

    AttentionBackendEnum.CPU_ATTN.clear_override()
    _cached_get_attn_backend.cache_clear()


def apply_override_from_env() -> None:
    """The general plugin of the override distribution: runs in every process of an engine subprocess."""
    class_path = os.environ.get(OVERRIDE_ENV)
    if class_path:
        override_cpu_attention(class_path)


def override_site(root: Path) -> Path:
    """A directory holding only the metadata of a distribution whose general plugin is apply_override_from_env."""
    target = f"{__name__}:{apply_override_from_env.__name__}"
    return entry_point_site(root, "vllm-scaffold-cpu-attn-override", "vllm.general_plugins", _PLUGIN, target)


@pytest.fixture
def cpu_attention_override(tmp_path: Path) -> Iterator[Callable[[str], dict[str, str]]]:
    """`route("pkg.mod.Backend")`: CPU engines of this test use that backend class instead of CPU_ATTN.

    Applies the override in this process at once and returns the environment that applies it in engine
    subprocesses (pass it to `run_python`). The override is removed after the test.
    """
    routed: list[str] = []

    def route(class_path: str) -> dict[str, str]:
        override_cpu_attention(class_path)
        routed.append(class_path)
        site = override_site(tmp_path / "cpu-attn-override")
        paths = [str(site), *(p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)]
        return {OVERRIDE_ENV: class_path, "PYTHONPATH": os.pathsep.join(paths)}

    yield route
    if routed:
        clear_cpu_attention_override()
