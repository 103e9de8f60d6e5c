"""`MyDeviceWorker`: vLLM's CPU worker, run by the my_device platform.

Imported by each worker process (the engine core's own process without multiprocessing) because
`MyDevicePlatform.check_and_update_config` names it in `parallel_config.worker_cls`. It reuses
vLLM's CPU worker and CPU model runner unchanged except for one method: the GPU worker it derives from
asks the platform for a sleep-mode memory allocator unless `current_platform.is_cpu()`, which is False for
any out-of-tree platform, and the host CPU has none.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext

from vllm.v1.worker.cpu_worker import CPUWorker


class MyDeviceWorker(CPUWorker):
    def _maybe_get_memory_pool_context(self, tag: str) -> AbstractContextManager:
        """Weights and KV cache go to ordinary host memory: no sleep-mode pool to enter."""
        return nullcontext()
