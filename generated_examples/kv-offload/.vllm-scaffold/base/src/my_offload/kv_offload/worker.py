"""The worker side of MyOffloadOffloadingSpec: the host store's bytes, and the copies between it and the KV
cache.

Created once per worker process by `MyOffloadOffloadingSpec.get_worker()`, when vLLM's OffloadingConnector
registers the worker's KV caches (after the KV cache is allocated, before the first step). Each step the
connector hands it the store and load jobs the scheduler side (`manager.py`) planned: a store copies blocks
the model computed into the slots the manager reserved; a load copies slots back into freshly allocated blocks
before the forward pass that reads them.

Each worker keeps its own shard of every block (its tensor-parallel slice of the KV heads), so the store holds
`capacity` slots per worker, in host memory (pinned when the cache is on a GPU). Copies run synchronously on
the current stream, in the order vLLM submits them: always correct, never overlapped with compute. Overlapping
them (a side stream per direction and an event per job, reported by `get_finished`) is the next step for a GPU
deployment; vLLM's own CPU offloading worker (`vllm/v1/kv_offload/cpu/gpu_worker.py`) shows how.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import torch
from vllm.v1.kv_offload.base import (
    CanonicalKVCaches,
    GPULoadStoreSpec,
    LoadStoreSpec,
    OffloadingWorker,
    TransferResult,
)

from my_offload.kv_offload import kernels
from my_offload.kv_offload.manager import HostSlots


@dataclass
class CopyCounters:
    """Blocks and bytes this worker copied since it started, per direction."""

    blocks_stored: int = 0
    blocks_loaded: int = 0
    bytes_stored: int = 0
    bytes_loaded: int = 0


class MyOffloadOffloadingWorker(OffloadingWorker):
    """Copies whole blocks between the KV-cache tensors vLLM registered and `capacity` host slots per
    tensor."""

    def __init__(
        self, kv_caches: CanonicalKVCaches, capacity: int, backend: kernels.Backend = "auto"
    ) -> None:
        self._pages = [entry.tensor for entry in kv_caches.tensors]
        # Per KV-cache group, the tensors its layers live in (layers sharing a tensor are copied once).
        self._group_tensors = [sorted({ref.tensor_idx for ref in refs}) for refs in kv_caches.group_data_refs]
        pin = any(pages.is_cuda for pages in self._pages)
        self._host = [
            torch.zeros((capacity, pages.shape[1]), dtype=pages.dtype, pin_memory=pin)
            for pages in self._pages
        ]
        self._backend = backend
        self._finished: list[TransferResult] = []
        self.counters = CopyCounters()

    def submit_store(self, job_id: int, src_spec: GPULoadStoreSpec, dst_spec: LoadStoreSpec) -> bool:
        start = time.perf_counter()
        size = 0
        for tensor_idx, blocks, slots in self._runs(src_spec, dst_spec):
            rows = kernels.gather_pages(self._pages[tensor_idx], blocks, self._backend)
            self._host[tensor_idx][slots] = rows.to("cpu")
            size += rows.numel() * rows.element_size()
        self.counters.blocks_stored += len(src_spec.block_ids)
        self.counters.bytes_stored += size
        self._finished.append(TransferResult(job_id, True, size, time.perf_counter() - start))
        return True

    def submit_load(
        self, job_id: int, src_spec: LoadStoreSpec, dst_spec: GPULoadStoreSpec, expedited: bool = False
    ) -> bool:
        """Copies host slots into blocks. `expedited` (passed from vLLM 0.33 on, for a load the step waits on)
        changes nothing here: every load is finished when this returns."""
        start = time.perf_counter()
        size = 0
        for tensor_idx, blocks, slots in self._runs(dst_spec, src_spec):
            pages = self._pages[tensor_idx]
            rows = self._host[tensor_idx][slots].to(pages.device, non_blocking=True)
            kernels.scatter_pages(pages, blocks, rows, self._backend)
            size += rows.numel() * rows.element_size()
        self.counters.blocks_loaded += len(dst_spec.block_ids)
        self.counters.bytes_loaded += size
        self._finished.append(TransferResult(job_id, True, size, time.perf_counter() - start))
        return True

    def get_finished(self) -> list[TransferResult]:
        finished, self._finished = self._finished, []
        return finished

    def wait(self, job_ids: set[int]) -> None:
        """Every job finished inside its submit call: nothing to wait for."""

    def _runs(
        self, device_spec: GPULoadStoreSpec, host_spec: LoadStoreSpec
    ) -> Iterator[tuple[int, torch.Tensor, torch.Tensor]]:
        """(tensor index, block ids, host slots) per tensor of each KV-cache group in the job."""
        if not isinstance(host_spec, HostSlots):
            raise TypeError(f"expected the host slots the manager planned, got {type(host_spec).__name__}")
        blocks = torch.from_numpy(device_spec.block_ids).to(torch.int64)
        slots = torch.from_numpy(host_spec.block_ids).to(torch.int64)
        if blocks.numel() != slots.numel():
            raise ValueError(
                f"{blocks.numel()} blocks for {slots.numel()} host slots: one slot holds one block"
            )
        start = 0
        for tensors, size in zip(self._group_tensors, device_spec.group_sizes, strict=True):
            for tensor_idx in tensors:
                yield tensor_idx, blocks[start : start + size], slots[start : start + size]
            start += size
