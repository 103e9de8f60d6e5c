"""The `disabled_kernels` fixture: set VLLM_DISABLED_KERNELS for one test, past vLLM's environment cache.

vLLM reads VLLM_DISABLED_KERNELS through `vllm.envs`, which an engine core freezes once it starts
(`enable_envs_cache`). A test that calls the linear-kernel selector after an engine ran in the same process
would otherwise see the frozen value.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest


@pytest.fixture
def disabled_kernels(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str | None], None]]:
    """`disabled_kernels(value)`: sets VLLM_DISABLED_KERNELS (None: unset) until the test ends."""
    import vllm.envs as envs

    def apply(value: str | None) -> None:
        if value is None:
            monkeypatch.delenv("VLLM_DISABLED_KERNELS", raising=False)
        else:
            monkeypatch.setenv("VLLM_DISABLED_KERNELS", value)
        envs.disable_envs_cache()

    yield apply
    monkeypatch.undo()
    envs.disable_envs_cache()
