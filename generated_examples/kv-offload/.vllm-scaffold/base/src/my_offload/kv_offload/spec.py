"""MyOffloadOffloadingSpec: a vLLM offloading spec that keeps prompt-prefix KV blocks in a bounded host-memory
store.

vLLM's OffloadingConnector builds it (through OffloadingSpecFactory, by the name `registration.py` registers)
in every process that builds the connector: the engine core, which asks `get_manager()` for the scheduler side
(`manager.py`), and each worker, which asks `get_worker()` for the copies (`worker.py`). When a block leaves
vLLM's own prefix cache, a later prompt with the same prefix loads it from this store instead of recomputing
it.

Configured through `kv_connector_extra_config`:
- `spec_name`: "MyOffloadOffloadingSpec" (selects this spec; vLLM's default is its own CPUOffloadingSpec);
- `store_bytes`: host memory per worker for the store, in bytes (default 1024 MiB);
- `copy_backend`: "auto" (Triton on GPU caches, torch otherwise), "triton" or "torch".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vllm.v1.kv_offload.base import CanonicalKVCaches, OffloadingSpec
from vllm.v1.kv_offload.config import OffloadingConfig

from my_offload.kv_offload.manager import MyOffloadOffloadingManager
from my_offload.kv_offload.worker import MyOffloadOffloadingWorker

DEFAULT_STORE_BYTES = 1024 << 20
BACKENDS = ("auto", "triton", "torch")


def store_capacity(extra_config: Mapping[str, Any], kv_bytes_per_block: int) -> int:
    """How many blocks the store holds per worker: `store_bytes` over the bytes of one block on one worker.

    0 for a config without bytes per block (vLLM's, built from a KV-cache config without blocks): nothing is
    stored.
    """
    store_bytes = int(extra_config.get("store_bytes", DEFAULT_STORE_BYTES))
    if kv_bytes_per_block <= 0:
        return 0
    capacity = store_bytes // kv_bytes_per_block
    if capacity < 1:
        raise ValueError(
            f"kv_connector_extra_config store_bytes={store_bytes} holds no block of {kv_bytes_per_block} "
            "bytes: give the store more memory"
        )
    return capacity


class MyOffloadOffloadingSpec(OffloadingSpec):
    """Offloads whole KV blocks to a host store of `store_bytes` per worker, least recently used out first."""

    def __init__(self, config: OffloadingConfig) -> None:
        super().__init__(config)
        if self.blocks_per_chunk != 1:
            raise ValueError(
                f"{type(self).__name__} stores one KV block per slot, got "
                f"blocks_per_chunk={self.blocks_per_chunk}: leave block_size and blocks_per_chunk out of "
                "kv_connector_extra_config"
            )
        backend = self.extra_config.get("copy_backend", "auto")
        if backend not in BACKENDS:
            raise ValueError(f"kv_connector_extra_config copy_backend={backend!r}: use one of {BACKENDS}")
        self.backend = backend
        self.capacity = store_capacity(self.extra_config, config.worker_kv_bytes_per_block)
        self._manager: MyOffloadOffloadingManager | None = None
        self._worker: MyOffloadOffloadingWorker | None = None

    def get_manager(self) -> MyOffloadOffloadingManager:
        if self._manager is None:
            self._manager = MyOffloadOffloadingManager(
                self.capacity, enable_events=self.kv_events_config.enable_kv_cache_events
            )
        return self._manager

    def get_worker(self, kv_caches: CanonicalKVCaches) -> MyOffloadOffloadingWorker:
        if self._worker is None:
            self._worker = MyOffloadOffloadingWorker(kv_caches, self.capacity, self.backend)
        return self._worker
