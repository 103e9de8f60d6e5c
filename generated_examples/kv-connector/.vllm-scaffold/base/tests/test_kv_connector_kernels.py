"""The block-copy kernels of `my_kv` against an eager PyTorch reference.

Runs without vLLM: it imports only torch, pytest and the kernel module. On CPU the test harness sets
TRITON_INTERPRET=1, so `backend="triton"` runs the Triton kernel in the interpreter (small shapes only).
The kernels move values without arithmetic, so every dtype must come back bit for bit: the interpreter's
bf16 arithmetic problem does not apply and fp16/bf16 run on CPU too. Tests marked `gpu` repeat the cases on
CUDA with a larger cache, where `backend="auto"` must pick Triton.
"""

from __future__ import annotations

import pytest
import torch

from my_kv.kv_connector import kernels

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
DTYPES = [torch.float32, torch.float16, torch.bfloat16]
BACKENDS = ["triton", "torch"]

# (num_blocks, num_heads, block_size, content, physical layout): odd sizes, both layouts vLLM uses.
CACHES = [
    pytest.param((6, 2, 16, 64, "BHNC"), id="contiguous"),
    pytest.param((5, 3, 8, 40, "BNHC"), id="token-major-odd"),
    pytest.param((9, 1, 32, 24, "BNHC"), id="one-head"),
]


def make_cache(spec: tuple, dtype: torch.dtype, device: str = DEVICE) -> torch.Tensor:
    """A [num_blocks, num_heads, block_size, content] view over the given physical layout."""
    num_blocks, heads, block_size, content, layout = spec
    if layout == "BHNC":
        return torch.randn(num_blocks, heads, block_size, content, device=device).to(dtype)
    return torch.randn(num_blocks, block_size, heads, content, device=device).to(dtype).permute(0, 2, 1, 3)


def slot_cases(num_blocks: int, block_size: int) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    order = torch.randperm(num_blocks, generator=generator)[:3]
    return {
        "three whole blocks, shuffled": kernels.slots_for_blocks(order, block_size),
        "partial last block": kernels.slots_for_blocks(order, block_size, 2 * block_size + 3),
        "padding slots": torch.tensor([block_size + 1, -1, 0, -1, num_blocks * block_size - 1]),
        "one token": torch.tensor([block_size * (num_blocks - 1)]),
        "no tokens": torch.empty(0, dtype=torch.int64),
    }


def reference_gather(cache: torch.Tensor, slots: torch.Tensor) -> torch.Tensor:
    block_size = cache.shape[2]
    rows = [
        cache[slot // block_size, :, slot % block_size] if slot >= 0 else torch.zeros_like(cache[0, :, 0])
        for slot in slots.tolist()
    ]
    return torch.stack(rows) if rows else cache.new_zeros((0, cache.shape[1], cache.shape[3]))


def reference_scatter(cache: torch.Tensor, slots: torch.Tensor, buffer: torch.Tensor) -> torch.Tensor:
    expected = cache.clone()
    block_size = cache.shape[2]
    for row, slot in enumerate(slots.tolist()):
        if slot >= 0:
            expected[slot // block_size, :, slot % block_size] = buffer[row]
    return expected


def run_cases(spec: tuple, dtype: torch.dtype, backend: str, device: str = DEVICE) -> None:
    cache = make_cache(spec, dtype, device)
    for label, slots in slot_cases(spec[0], spec[2]).items():
        gathered = kernels.gather_slots(cache, slots, backend=backend)
        assert gathered.is_contiguous(), label
        assert torch.equal(gathered, reference_gather(cache, slots.to(device))), label

        buffer = torch.randn(slots.numel(), spec[1], spec[3], device=device).to(dtype)
        target = cache.clone()
        kernels.scatter_slots(target, slots, buffer, backend=backend)
        assert torch.equal(target, reference_scatter(cache, slots.to(device), buffer)), label


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("spec", CACHES)
def test_copies_match_reference(spec: tuple, dtype: torch.dtype, backend: str) -> None:
    run_cases(spec, dtype, backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_gather_then_scatter_round_trips_blocks(backend: str) -> None:
    source = make_cache((8, 2, 16, 32, "BNHC"), torch.float32)
    target = torch.zeros_like(source)
    slots = kernels.slots_for_blocks([6, 1, 4], 16)
    gathered = kernels.gather_slots(source, slots, backend=backend)
    kernels.scatter_slots(target, slots, gathered, backend=backend)
    assert torch.equal(target[[6, 1, 4]], source[[6, 1, 4]])
    assert not target[[0, 2, 3, 5, 7]].any(), "blocks outside the slot mapping were written"


def test_bad_shapes_are_refused() -> None:
    cache = make_cache((4, 2, 8, 16, "BHNC"), torch.float32)
    with pytest.raises(ValueError, match="num_blocks, heads"):
        kernels.gather_slots(cache[0], torch.tensor([0]))
    with pytest.raises(ValueError, match="buffer must be"):
        kernels.scatter_slots(cache, torch.tensor([0, 1]), torch.zeros(3, 2, 16))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_auto_backend_uses_triton_on_cuda_and_matches(dtype: torch.dtype) -> None:
    assert kernels.triton_usable(torch.empty(1, device="cuda"))
    run_cases((512, 8, 16, 256, "BNHC"), dtype, "auto", device="cuda")
    run_cases((64, 4, 32, 128, "BHNC"), dtype, "triton", device="cuda")


def test_traffic_matches_a_hand_count() -> None:
    """3 tokens x 2 heads x 4 content elements of bf16 (2 bytes), read and written: 2 x 24 x 2 bytes, plus
    3 int64 slots; a copy does no FLOPs."""
    assert kernels.traffic(3, 2, 4, torch.bfloat16) == (2 * 24 * 2 + 3 * 8, 0)
