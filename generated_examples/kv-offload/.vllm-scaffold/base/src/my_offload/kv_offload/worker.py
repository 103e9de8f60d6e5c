"""The worker side of MyOffloadOffloadingSpec: the host store's bytes, and the copies between it and the KV
cache.

Created once per worker process by `MyOffloadOffloadingSpec.get_worker()`, when vLLM's OffloadingConnector
registers the worker's KV caches (after the KV cache is allocated, before the first step). Each step the
connector hands it the store and load jobs the scheduler side (`manager.py`) planned: a store copies blocks
the model computed into the slots the manager reserved; a load copies slots back into the blocks allocated for
them.

How a job names its KV-cache blocks depends on the release. vLLM 0.31.0 to 0.33.0: The OffloadingConnector's
worker side hands an offloading worker a job's GPU blocks as a `GPULoadStoreSpec` (the block ids, and how many
belong to each KV-cache group, `group_sizes`): the source of `submit_store(job_id, src_spec, dst_spec)` and
the destination of `submit_load(job_id, src_spec, dst_spec)`. vLLM 0.34.0: The OffloadingConnector's worker
side resolves a job's GPU blocks to device pointers before it calls the offloading worker:
`submit_store(job_id, device_ptrs, dst_spec)` and `submit_load(job_id, src_spec, device_ptrs, expedited)`.
`device_ptrs` is a `DevicePointers`: `ptrs` holds, per KV-cache group, per data reference of the group (the
worker's `CanonicalKVCaches.group_data_refs`), per block of the group, the block's address in its cache
tensor, `data_ptr() + block_id * stride(0)`; `group_block_counts` and `group_data_ref_counts` give the blocks
and the data references of each group. The worker takes both: a block spec gives the block ids, a pointer its
block's offset in the cache tensor of its data reference, over the tensor's block stride.

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
from typing import Protocol

import numpy as np
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


class DevicePointers(Protocol):
    """The fields of `vllm.v1.kv_offload.base.DevicePointers` (a job's blocks as addresses) this worker uses,
    declared here since the older releases the package supports have no such class."""

    ptrs: np.ndarray  # uint64: per group, per data reference of the group, per block
    group_block_counts: tuple[int, ...]
    group_data_ref_counts: tuple[int, ...]


# A job's KV-cache blocks, as the running release hands them.
DeviceBlocks = GPULoadStoreSpec | DevicePointers


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
        # Per KV-cache group, the tensor of each of its data references (layers sharing a tensor are copied
        # once).
        self._group_refs = [[ref.tensor_idx for ref in refs] for refs in kv_caches.group_data_refs]
        pin = any(pages.is_cuda for pages in self._pages)
        self._host = [
            torch.zeros((capacity, pages.shape[1]), dtype=pages.dtype, pin_memory=pin)
            for pages in self._pages
        ]
        self._backend = backend
        self._finished: list[TransferResult] = []
        self.counters = CopyCounters()

    def submit_store(self, job_id: int, device: DeviceBlocks, dst_spec: LoadStoreSpec) -> bool:
        start = time.perf_counter()
        size = 0
        host_slots = _slots(dst_spec)
        for tensor_idx, blocks, slots in self._runs(device, host_slots):
            rows = kernels.gather_pages(self._pages[tensor_idx], blocks, self._backend)
            self._host[tensor_idx][slots] = rows.to("cpu")
            size += rows.numel() * rows.element_size()
        self.counters.blocks_stored += host_slots.numel()
        self.counters.bytes_stored += size
        self._finished.append(TransferResult(job_id, True, size, time.perf_counter() - start))
        return True

    def submit_load(
        self, job_id: int, src_spec: LoadStoreSpec, device: DeviceBlocks, expedited: bool = False
    ) -> bool:
        """Copies host slots into blocks. `expedited` (a load the step waits on) changes nothing here: every
        load is finished when this returns."""
        start = time.perf_counter()
        size = 0
        host_slots = _slots(src_spec)
        for tensor_idx, blocks, slots in self._runs(device, host_slots):
            pages = self._pages[tensor_idx]
            rows = self._host[tensor_idx][slots].to(pages.device, non_blocking=True)
            kernels.scatter_pages(pages, blocks, rows, self._backend)
            size += rows.numel() * rows.element_size()
        self.counters.blocks_loaded += host_slots.numel()
        self.counters.bytes_loaded += size
        self._finished.append(TransferResult(job_id, True, size, time.perf_counter() - start))
        return True

    def get_finished(self) -> list[TransferResult]:
        finished, self._finished = self._finished, []
        return finished

    def wait(self, job_ids: set[int]) -> None:
        """Every job finished inside its submit call: nothing to wait for."""

    def _runs(
        self, device: DeviceBlocks, slots: torch.Tensor
    ) -> Iterator[tuple[int, torch.Tensor, torch.Tensor]]:
        """(tensor index, block ids, host slots) per tensor of each KV-cache group in the job."""
        groups = list(
            self._spec_groups(device)
            if isinstance(device, GPULoadStoreSpec)
            else self._pointer_groups(device)
        )
        blocks_in_job = sum(size for size, _ in groups)
        if blocks_in_job != slots.numel():
            raise ValueError(
                f"{blocks_in_job} blocks for {slots.numel()} host slots: one slot holds one block"
            )
        start = 0
        for size, tensor_blocks in groups:
            for tensor_idx, blocks in tensor_blocks:
                yield tensor_idx, blocks, slots[start : start + size]
            start += size

    def _spec_groups(self, spec: GPULoadStoreSpec) -> Iterator[tuple[int, list[tuple[int, torch.Tensor]]]]:
        """Per KV-cache group: its number of blocks in the job, and (tensor index, block ids) per tensor."""
        block_ids = torch.from_numpy(spec.block_ids).to(torch.int64)
        start = 0
        for refs, size in zip(self._group_refs, spec.group_sizes, strict=True):
            blocks = block_ids[start : start + size]
            yield size, [(tensor_idx, blocks) for tensor_idx in dict.fromkeys(refs)]
            start += size

    def _pointer_groups(
        self, pointers: DevicePointers
    ) -> Iterator[tuple[int, list[tuple[int, torch.Tensor]]]]:
        """As `_spec_groups`, from the blocks' addresses: a block's id is its offset in the tensor of its data
        reference over the tensor's block stride."""
        counts = zip(pointers.group_block_counts, pointers.group_data_ref_counts, strict=True)
        op = 0
        for refs, (size, num_refs) in zip(self._group_refs, counts, strict=True):
            if num_refs != len(refs):
                raise ValueError(f"{num_refs} data references in a group of the job, {len(refs)} registered")
            tensor_blocks: dict[int, torch.Tensor] = {}
            for tensor_idx in refs:
                addresses = pointers.ptrs[op : op + size]
                tensor_blocks.setdefault(tensor_idx, self._block_ids(tensor_idx, addresses))
                op += size
            yield size, list(tensor_blocks.items())
        if op != len(pointers.ptrs):
            raise ValueError(f"{len(pointers.ptrs)} pointers for {op} blocks of registered data references")

    def _block_ids(self, tensor_idx: int, addresses: np.ndarray) -> torch.Tensor:
        pages = self._pages[tensor_idx]
        stride = pages.stride(0) * pages.element_size()
        offsets = addresses.astype(np.int64) - pages.data_ptr()
        if ((offsets < 0) | (offsets % stride != 0) | (offsets >= pages.shape[0] * stride)).any():
            raise ValueError(
                f"a pointer of the job is not the start of a block of KV-cache tensor {tensor_idx}"
            )
        return torch.from_numpy(offsets // stride)


def _slots(host_spec: LoadStoreSpec) -> torch.Tensor:
    """The host slots of a job, one per block, group after group, as the manager planned them."""
    if not isinstance(host_spec, HostSlots):
        raise TypeError(f"expected the host slots the manager planned, got {type(host_spec).__name__}")
    return torch.from_numpy(host_spec.block_ids).to(torch.int64)
