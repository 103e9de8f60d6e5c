"""vLLM's CPU platform with a Ray device key, so the Ray executors run on the CPU build in tests.

vLLM's `CpuPlatform` leaves `ray_device_key` empty and both Ray executors refuse it ("current platform cpu does
not support ray"). This subclass names Ray's "GPU" resource instead: every worker asks for one, and the test
cluster advertises as many as it has workers. It is loaded through the `vllm.platform_plugins` entry point
that `vllm_scaffold_testing.scale_out.ray_platform_site` writes, in each process of a Ray engine (front end,
engine core, every Ray worker), and nowhere else. Everything else is the CPU platform unchanged.
"""

from __future__ import annotations

from vllm.platforms.cpu import CpuPlatform


class RayCpuPlatform(CpuPlatform):
    ray_device_key: str = "GPU"


def activate() -> str:
    """The `vllm.platform_plugins` entry point: always active where its entry point is visible."""
    return f"{__name__}.{RayCpuPlatform.__qualname__}"
