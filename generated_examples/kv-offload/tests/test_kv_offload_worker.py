"""`MyOffloadOffloadingWorker` driven directly with store and load jobs, without an engine.

The KV caches are CPU byte pages in vLLM's `CanonicalKVCaches` form: one group of two layers sharing a tensor,
and a group of its own on a strided tensor. A job stores some blocks
into host slots; after the blocks are overwritten, a load writes the slots back into other blocks, which must
then hold the stored bytes bit for bit while every other block is left alone.

Each job comes in both shapes the package's vLLM releases use: a block spec, and the same blocks as device
pointers. The OffloadingConnector's worker side resolves a job's GPU blocks to device pointers before it calls
the offloading worker: `submit_store(job_id, device_ptrs, dst_spec)` and `submit_load(job_id, src_spec,
device_ptrs, expedited)`. `device_ptrs` is a `DevicePointers`: `ptrs` holds, per KV-cache group, per data
reference of the group (the worker's `CanonicalKVCaches.group_data_refs`), per block of the group, the block's
address in its cache tensor, `data_ptr() + block_id * stride(0)`; `group_block_counts` and
`group_data_ref_counts` give the blocks and the data references of each group. `device_pointers` below builds
that layout, so the pointer path is tested on the CPU builds too, which have no pointers; where the installed
vLLM has its own resolution (`vllm.v1.kv_offload.pointer_utils`), the last test holds the layout to it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
import torch

pytest.importorskip("vllm")

from vllm.v1.kv_offload.base import (  # noqa: E402
    CanonicalKVCacheRef,
    CanonicalKVCaches,
    CanonicalKVCacheTensor,
    GPULoadStoreSpec,
)

from my_offload.kv_offload.manager import HostSlots  # noqa: E402
from my_offload.kv_offload.worker import MyOffloadOffloadingWorker  # noqa: E402

PAGE = 96  # bytes of one block in each tensor
NUM_BLOCKS = 8
CAPACITY = 4


def kv_caches() -> CanonicalKVCaches:
    """Tensor 0 holds two layers of group 0 (two data references to one tensor); tensor 1, group 1's one
    layer, has rows `2 * PAGE` bytes apart (another layer's bytes between them)."""
    shared = torch.randint(-128, 128, (NUM_BLOCKS, PAGE), dtype=torch.int8)
    storage = torch.randint(-128, 128, (NUM_BLOCKS * 2 * PAGE,), dtype=torch.int8)
    strided = storage.as_strided((NUM_BLOCKS, PAGE), (2 * PAGE, 1))
    return CanonicalKVCaches(
        tensors=[CanonicalKVCacheTensor(shared, PAGE), CanonicalKVCacheTensor(strided, PAGE)],
        group_data_refs=[
            [CanonicalKVCacheRef(0, PAGE), CanonicalKVCacheRef(0, PAGE)],
            [CanonicalKVCacheRef(1, PAGE)],
        ],
    )


def block_spec(groups: list[list[int]]) -> GPULoadStoreSpec:
    """A job's blocks, group by group, as a block spec."""
    return GPULoadStoreSpec(
        [block for group in groups for block in group], [len(g) for g in groups], [0] * len(groups)
    )


@dataclass
class DevicePointers:
    """The fields of `vllm.v1.kv_offload.base.DevicePointers`, which the older releases do not have."""

    ptrs: np.ndarray
    sizes: np.ndarray
    group_block_counts: tuple[int, ...]
    group_data_ref_counts: tuple[int, ...]
    block_indices: tuple[int, ...]


def device_pointers(spec: GPULoadStoreSpec, caches: CanonicalKVCaches) -> DevicePointers:
    """The job of `spec` as device pointers: per group, per data reference of the group, per block, the
    block's address in its tensor (`test_the_pointers_are_those_vllm_resolves` holds it to vLLM's own
    resolution)."""
    ptrs, sizes, start = [], [], 0
    for size, refs in zip(spec.group_sizes, caches.group_data_refs, strict=True):
        for ref in refs:
            tensor = caches.tensors[ref.tensor_idx].tensor
            ptrs += [
                tensor.data_ptr() + int(block) * tensor.stride(0)
                for block in spec.block_ids[start : start + size]
            ]
            sizes += [ref.page_size_bytes] * size
        start += size
    return DevicePointers(
        np.array(ptrs, dtype=np.uint64),
        np.array(sizes, dtype=np.uint64),
        tuple(spec.group_sizes),
        tuple(len(refs) for refs in caches.group_data_refs),
        tuple(spec.block_indices),
    )


def job(shape: str, groups: list[list[int]], caches: CanonicalKVCaches):
    """A job's blocks in the shape under test."""
    spec = block_spec(groups)
    return spec if shape == "block-spec" else device_pointers(spec, caches)


@pytest.mark.parametrize("shape", ["block-spec", "device-pointers"])
def test_stored_blocks_load_back_into_other_blocks_bit_for_bit(shape: str) -> None:
    caches = kv_caches()
    shared, strided = (entry.tensor for entry in caches.tensors)
    worker = MyOffloadOffloadingWorker(caches, CAPACITY, backend="torch")
    stored = {"shared": shared[[5, 2]].clone(), "strided": strided[[7]].clone()}

    assert worker.submit_store(1, job(shape, [[5, 2], [7]], caches), HostSlots([3, 0, 1]))
    shared.zero_()
    strided.zero_()
    assert worker.submit_load(2, HostSlots([3, 0, 1]), job(shape, [[1, 6], [0]], caches), expedited=True)

    assert torch.equal(shared[[1, 6]], stored["shared"]) and torch.equal(strided[[0]], stored["strided"])
    untouched = [block for block in range(NUM_BLOCKS) if block not in (1, 6)]
    assert not shared[untouched].any() and not strided[1:].any()
    assert [(r.job_id, r.success) for r in worker.get_finished()] == [(1, True), (2, True)]
    assert worker.get_finished() == []


@pytest.mark.parametrize("shape", ["block-spec", "device-pointers"])
def test_layers_sharing_a_tensor_are_copied_once(shape: str) -> None:
    caches = kv_caches()
    worker = MyOffloadOffloadingWorker(caches, CAPACITY, backend="torch")
    worker.submit_store(1, job(shape, [[5, 2], [7]], caches), HostSlots([3, 0, 1]))
    assert worker.counters.blocks_stored == 3
    assert worker.counters.bytes_stored == 3 * PAGE
    (result,) = worker.get_finished()
    assert result.transfer_size == 3 * PAGE


@pytest.mark.parametrize("shape", ["block-spec", "device-pointers"])
def test_blocks_and_slots_must_correspond_one_to_one(shape: str) -> None:
    caches = kv_caches()
    worker = MyOffloadOffloadingWorker(caches, CAPACITY, backend="torch")
    with pytest.raises(ValueError, match="one slot holds one block"):
        worker.submit_store(1, job(shape, [[5, 2], [7]], caches), HostSlots([3, 0]))


def test_a_pointer_outside_the_registered_caches_is_refused() -> None:
    caches = kv_caches()
    worker = MyOffloadOffloadingWorker(caches, CAPACITY, backend="torch")
    pointers = device_pointers(block_spec([[5, 2], [7]]), caches)
    pointers.ptrs[0] += 1  # inside block 5, not its start
    with pytest.raises(ValueError, match="not the start of a block of KV-cache tensor 0"):
        worker.submit_store(1, pointers, HostSlots([3, 0, 1]))


def test_the_pointers_are_those_vllm_resolves() -> None:
    """On a release with `vllm.v1.kv_offload.pointer_utils` (0.34 on), its `DevicePointers` for a job equal
    this test's, and the worker takes them."""
    try:
        from vllm.v1.kv_offload.pointer_utils import resolve_device_pointers
    except ImportError:
        pytest.skip("this vLLM passes block specs")
    caches = kv_caches()
    shared, strided = (entry.tensor for entry in caches.tensors)
    spec = block_spec([[5, 2], [7]])
    theirs, ours = resolve_device_pointers(spec, caches), device_pointers(spec, caches)
    assert np.array_equal(theirs.ptrs, ours.ptrs) and np.array_equal(theirs.sizes, ours.sizes)
    fields = ("group_block_counts", "group_data_ref_counts", "block_indices")
    assert [getattr(theirs, f) for f in fields] == [getattr(ours, f) for f in fields]

    worker = MyOffloadOffloadingWorker(caches, CAPACITY, backend="torch")
    stored = {"shared": shared[[5, 2]].clone(), "strided": strided[[7]].clone()}
    assert worker.submit_store(1, theirs, HostSlots([3, 0, 1]))
    load = resolve_device_pointers(block_spec([[1, 6], [0]]), caches)
    assert worker.submit_load(2, HostSlots([3, 0, 1]), load, expedited=True)
    assert torch.equal(shared[[1, 6]], stored["shared"]) and torch.equal(strided[[0]], stored["strided"])
