"""Copies between vLLM's paged KV cache and a contiguous buffer: Triton kernels and a torch fallback.

Loaded by the worker-side connector (in each worker process, when it saves or loads KV) and by the
tests and benchmark; it imports only torch and triton, so it also works where vLLM is absent.

The kernels take a layer's cache as a 4-D view, [num_blocks, num_heads, block_size, content] with any
strides, which the connector makes of each layer's cache; `content` is whatever the backend keeps per head
and token. A slot mapping names one token per entry: slot = block_id * block_size + offset; negative slots
are padding and are skipped. `gather_slots` copies those tokens out into a contiguous [num_tokens, num_heads,
content] buffer; `scatter_slots` writes such a buffer back. Any number of tokens and blocks, partial blocks
included.

The Triton path runs when the cache is on a GPU, or on CPU under TRITON_INTERPRET=1 when asked for
explicitly (`backend="triton"`, for tests); the torch path (advanced indexing) runs everywhere else.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from functools import partial
from typing import Literal

import torch

try:
    import triton
    import triton.language as tl
except ImportError:  # torch-only machines use the fallback
    triton = None

Backend = Literal["auto", "triton", "torch"]
# Elements one Triton program copies. Large tiles keep the interpreter fast (its cost is per program);
# on a GPU 2048 elements per program keeps every SM busy for the block sizes vLLM uses.
BLOCK_ELEMENTS = 2048


def slots_for_blocks(
    block_ids: torch.Tensor | list[int], block_size: int, num_tokens: int | None = None
) -> torch.Tensor:
    """The slot mapping of whole blocks, in order, cut to `num_tokens` when given (int64, on CPU)."""
    blocks = torch.as_tensor(block_ids, dtype=torch.int64).reshape(-1, 1)
    slots = (blocks * block_size + torch.arange(block_size, dtype=torch.int64)).reshape(-1)
    return slots if num_tokens is None else slots[:num_tokens]


def triton_usable(cache: torch.Tensor) -> bool:
    """Whether the Triton kernels can run on `cache`: Triton present, and a GPU tensor or the interpreter."""
    if triton is None:
        return False
    return cache.is_cuda or (cache.device.type == "cpu" and os.environ.get("TRITON_INTERPRET") == "1")


def _use_triton(cache: torch.Tensor, backend: Backend) -> bool:
    if backend == "torch":
        return False
    if backend == "triton":
        if not triton_usable(cache):
            raise RuntimeError(
                f"backend='triton' needs Triton and a CUDA tensor (or TRITON_INTERPRET=1), got {cache.device}"
            )
        return True
    return triton is not None and cache.is_cuda


def _check(cache: torch.Tensor, slots: torch.Tensor, buffer: torch.Tensor | None = None) -> None:
    if cache.dim() != 4:
        raise ValueError(f"cache must be [num_blocks, heads, block_size, content], got {tuple(cache.shape)}")
    if slots.dim() != 1 or slots.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"slots must be a 1-D int32/int64 tensor, got {slots.dtype} {tuple(slots.shape)}")
    if buffer is not None:
        expected = (slots.numel(), cache.shape[1], cache.shape[3])
        if tuple(buffer.shape) != expected or buffer.dtype != cache.dtype:
            raise ValueError(
                f"buffer must be {cache.dtype} {expected}, got {buffer.dtype} {tuple(buffer.shape)}"
            )


def gather_slots(cache: torch.Tensor, slots: torch.Tensor, backend: Backend = "auto") -> torch.Tensor:
    """The tokens at `slots` as a new contiguous [len(slots), num_heads, content] tensor on cache's device.

    Padding slots (negative) give zeros.
    """
    slots = slots.to(cache.device)
    _check(cache, slots)
    shape = (slots.numel(), cache.shape[1], cache.shape[3])
    if _use_triton(cache, backend):
        out = torch.empty(shape, dtype=cache.dtype, device=cache.device)
        if slots.numel():
            _launch(cache, slots, out, gather=True)
    else:
        out = torch.zeros(shape, dtype=cache.dtype, device=cache.device)
        valid = slots >= 0
        block_size = cache.shape[2]
        out[valid] = cache[slots[valid] // block_size, :, slots[valid] % block_size]
    return out


def scatter_slots(
    cache: torch.Tensor, slots: torch.Tensor, buffer: torch.Tensor, backend: Backend = "auto"
) -> None:
    """Writes `buffer` ([len(slots), num_heads, content]) into `cache` at `slots`, in place; skips padding."""
    slots = slots.to(cache.device)
    buffer = buffer.to(cache.device)
    _check(cache, slots, buffer)
    if slots.numel() == 0:
        return
    if _use_triton(cache, backend):
        _launch(cache, slots, buffer.contiguous(), gather=False)
    else:
        valid = slots >= 0
        block_size = cache.shape[2]
        cache[slots[valid] // block_size, :, slots[valid] % block_size] = buffer[valid]


def _launch(cache: torch.Tensor, slots: torch.Tensor, buffer: torch.Tensor, *, gather: bool) -> None:
    num_tokens = slots.numel()
    _, num_heads, block_size, content = cache.shape
    total = num_tokens * num_heads * content
    grid = (triton.cdiv(total, BLOCK_ELEMENTS),)
    _copy_slots_kernel[grid](
        cache,
        buffer,
        slots,
        total,
        num_heads,
        block_size,
        content,
        *cache.stride(),
        GATHER=gather,
        BLOCK=BLOCK_ELEMENTS,
    )


if triton is not None:

    @triton.jit
    def _copy_slots_kernel(
        cache_ptr,
        buffer_ptr,
        slots_ptr,
        total,
        num_heads,
        block_size,
        content,
        stride_block,
        stride_head,
        stride_token,
        stride_content,
        GATHER: tl.constexpr,
        BLOCK: tl.constexpr,
    ):
        """One program copies BLOCK consecutive elements of the contiguous [tokens, heads, content] buffer."""
        offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        in_range = offsets < total
        per_token = num_heads * content
        token = offsets // per_token
        head = (offsets % per_token) // content
        column = offsets % content
        slot = tl.load(slots_ptr + token, mask=in_range, other=-1).to(tl.int64)
        mask = in_range & (slot >= 0)
        cache_offsets = (
            (slot // block_size) * stride_block
            + head * stride_head
            + (slot % block_size) * stride_token
            + column * stride_content
        )
        # Plain loads and stores, no arithmetic on the values: exact for every dtype, bf16 and fp8 included.
        if GATHER:
            values = tl.load(cache_ptr + cache_offsets, mask=mask, other=0)
            tl.store(buffer_ptr + offsets, values, mask=in_range)
        else:
            values = tl.load(buffer_ptr + offsets, mask=mask)
            tl.store(cache_ptr + cache_offsets, values, mask=mask)


def traffic(
    num_tokens: int, num_heads: int, content: int, dtype: torch.dtype, slot_dtype: torch.dtype = torch.int64
) -> tuple[int, int]:
    """(bytes, FLOPs) of one `gather_slots` or `scatter_slots` of `num_tokens` tokens, none padding: every
    element of [num_tokens, num_heads, content] read once and written once, and each token's slot read once.
    A copy does no arithmetic: 0 FLOPs, so it is bound by memory."""
    return 2 * num_tokens * num_heads * content * dtype.itemsize + num_tokens * slot_dtype.itemsize, 0


def cuda_launch_configs() -> Iterator[tuple[str, torch.dtype, Callable[[], None]]]:
    """The gather and the scatter of the CUDA path per cache dtype (the tile does not depend on the shape), as
    calls of the host code on shape-only ("meta") tensors; `pytest --cuda-arch` compiles them for GPUs."""
    for dtype in (torch.float16, torch.bfloat16, torch.float32):
        cache = torch.empty(512, 8, 16, 256, dtype=dtype, device="meta")
        slots = torch.empty(1024, dtype=torch.int64, device="meta")
        buffer = torch.empty(1024, 8, 256, dtype=dtype, device="meta")
        for gather in (True, False):
            case = "gather" if gather else "scatter"
            yield f"{case}, 1024 tokens", dtype, partial(_launch, cache, slots, buffer, gather=gather)
