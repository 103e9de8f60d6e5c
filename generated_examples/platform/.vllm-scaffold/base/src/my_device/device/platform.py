"""`MyDevicePlatform`: the out-of-tree platform vLLM uses when `detect()` claims the machine.

vLLM imports this module in every process (front end, engine core, each worker) when it resolves
`vllm.platforms.current_platform` and the `my_device` detector returned this class's path; an instance of
the class becomes `current_platform`. vLLM calls its hooks while it builds the config
(`check_and_update_config`), picks the worker class and the attention backend, and dispatches every
enabled CustomOp to `forward_oot` because `_enum` is `PlatformEnum.OOT`.

It is CPU-backed on purpose, and says so: the reference device is the host CPU. It subclasses vLLM's
`CpuPlatform` for memory queries, dtypes and the CPU-specific config rules; it runs vLLM's CPU worker
(through the one-method subclass WORKER_CLASS) with vLLM's CPU communicator (COMMUNICATOR_CLASS) and,
unless the CUSTOM attention backend is selected, vLLM's CPU attention backend. Porting it to real
hardware means replacing those three and `device_name`/`device_type`/`dispatch_key`/`dist_backend`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vllm.platforms.cpu import CpuPlatform
from vllm.platforms.interface import PlatformEnum
from vllm.v1.attention.backends.registry import AttentionBackendEnum

if TYPE_CHECKING:
    from vllm.config import VllmConfig
    from vllm.v1.attention.selector import AttentionSelectorConfig

WORKER_CLASS = "my_device.device.worker.MyDeviceWorker"
COMMUNICATOR_CLASS = "vllm.distributed.device_communicators.cpu_communicator.CpuCommunicator"


class MyDevicePlatform(CpuPlatform):
    _enum = PlatformEnum.OOT
    # For an out-of-tree platform vLLM builds torch.device(f"{device_name}:{index}"), so device_name must be a
    # torch device type: "cpu" here; a real device registers its own (torch's PrivateUse1 renamed).
    device_name: str = "cpu"
    device_type: str = "cpu"
    dispatch_key: str = "CPU"
    dist_backend: str = "gloo"

    @classmethod
    def get_device_name(cls, device_id: int = 0) -> str:
        """The name vLLM prints for device `device_id`."""
        return f"my_device (CPU-backed) {device_id}"

    @classmethod
    def get_attn_backend_cls(
        cls,
        selected_backend: AttentionBackendEnum | None,
        attn_selector_config: AttentionSelectorConfig,
        num_heads: int | None = None,
    ) -> str:
        """The backend class path: a registered CUSTOM backend when selected, the CPU backend otherwise."""
        if selected_backend == AttentionBackendEnum.CUSTOM:
            # vLLM raises ValueError "Backend CUSTOM must be registered before use." when none was registered.
            return selected_backend.get_path()
        return super().get_attn_backend_cls(selected_backend, attn_selector_config, num_heads)

    @classmethod
    def check_and_update_config(cls, vllm_config: VllmConfig) -> None:
        """Sets the worker class (vLLM only rewrites "auto" for its own platforms), then the CPU rules."""
        parallel_config = vllm_config.parallel_config
        if parallel_config.worker_cls == "auto":
            parallel_config.worker_cls = WORKER_CLASS
        super().check_and_update_config(vllm_config)

    @classmethod
    def get_device_communicator_cls(cls) -> str:
        return COMMUNICATOR_CLASS
