"""Masks selected logits rows so that only their allowed token ids stay finite, in one pass.

Called by `my_lp.logits.processor` inside the vLLM worker, once per decoding step, on the
batch's logits before sampling. It imports only torch and triton (never vLLM), so the kernel and its tests
also run where vLLM is absent.

`allowed` is an int tensor [num_selected, max_allowed], padded with -1. Row i of the selection is
`logits[rows[i]]`; every column of it not listed in `allowed[i]` becomes -inf. A selected row whose
`allowed[i, 0]` is negative is left untouched, which lets a caller pass every row of a batch and mark the
ones to skip without a device-to-host sync. Allowed ids outside [0, vocab_size) match no column.

The Triton kernel runs on CUDA, and on CPU tensors under TRITON_INTERPRET=1; anywhere else
`mask_to_allowed` uses the torch version.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from functools import partial

import torch

try:
    import triton
    import triton.language as tl
except ImportError:  # torch-only environments use the fallback
    triton = None

MAX_BLOCK = 4096


def mask_to_allowed_torch(logits: torch.Tensor, rows: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    """The torch version: the same contract as the kernel, in place; returns `logits`."""
    if rows.numel() == 0:
        return logits
    vocab = torch.arange(logits.shape[-1], device=logits.device)
    keep = (vocab[None, None, :] == allowed[:, :, None]).any(dim=1)
    keep |= (allowed[:, 0] < 0)[:, None]
    logits[rows] = logits[rows].masked_fill(~keep, float("-inf"))
    return logits


if triton is not None:

    @triton.jit
    def _mask_to_allowed_kernel(
        logits_ptr,
        logits_row_stride,
        rows_ptr,
        allowed_ptr,
        allowed_row_stride,
        num_allowed,
        vocab_size,
        BLOCK: tl.constexpr,
    ):
        # One program per (selected row, block of columns): each column is written at most once.
        sel = tl.program_id(0)
        cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
        allowed_row = allowed_ptr + sel * allowed_row_stride
        if tl.load(allowed_row) >= 0:
            keep = cols >= vocab_size
            for k in range(num_allowed):
                keep = keep | (cols == tl.load(allowed_row + k))
            row = tl.load(rows_ptr + sel).to(tl.int64)
            neg_inf = tl.full([BLOCK], float("-inf"), logits_ptr.dtype.element_ty)
            tl.store(logits_ptr + row * logits_row_stride + cols, neg_inf, mask=~keep)


def triton_usable(logits: torch.Tensor) -> bool:
    """Whether the Triton kernel can run on `logits`: CUDA, or CPU under the Triton interpreter."""
    if triton is None:
        return False
    return logits.is_cuda or (logits.device.type == "cpu" and os.environ.get("TRITON_INTERPRET") == "1")


def mask_to_allowed_triton(logits: torch.Tensor, rows: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    """The Triton version, in place; returns `logits`. `logits` must have unit stride along the vocabulary."""
    num_selected, vocab_size = rows.numel(), logits.shape[-1]
    if num_selected == 0:
        return logits
    assert logits.stride(-1) == 1, "logits rows must be contiguous"
    assert allowed.shape[0] == num_selected and allowed.shape[1] >= 1
    allowed = allowed.contiguous()
    block = min(triton.next_power_of_2(vocab_size), MAX_BLOCK)
    grid = (num_selected, triton.cdiv(vocab_size, block))
    _mask_to_allowed_kernel[grid](
        logits, logits.stride(0), rows, allowed, allowed.stride(0), allowed.shape[1], vocab_size, BLOCK=block
    )
    return logits


def mask_to_allowed(logits: torch.Tensor, rows: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    """Masks `logits[rows[i]]` to `allowed[i]` in place with the Triton kernel when it can run, else torch."""
    if triton_usable(logits):
        return mask_to_allowed_triton(logits, rows, allowed)
    return mask_to_allowed_torch(logits, rows, allowed)


def traffic(num_selected: int, vocab_size: int, num_allowed: int, dtype: torch.dtype) -> tuple[int, int]:
    """(bytes, FLOPs) of one call on `num_selected` rows, none skipped, each allowing `num_allowed` distinct
    ids of the vocabulary, with int64 `rows` and `allowed`: each row's other vocab_size - num_allowed logits
    are written (-inf, never read) and its row index and allowed ids read once. The kernel only compares
    integers: 0 FLOPs, so it is bound by memory."""
    written = num_selected * (vocab_size - num_allowed) * dtype.itemsize
    return written + num_selected * (1 + num_allowed) * torch.int64.itemsize, 0


def cuda_launch_configs() -> Iterator[tuple[str, torch.dtype, Callable[[], torch.Tensor]]]:
    """The launch of the CUDA path per logits dtype at a real vocabulary (the tile is MAX_BLOCK), as a call of
    the host code on shape-only ("meta") tensors; `pytest --cuda-arch` compiles it for real GPUs."""
    rows = torch.empty(64, dtype=torch.int64, device="meta")
    allowed = torch.empty(64, 32, dtype=torch.int64, device="meta")
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        logits = torch.empty(256, 128256, dtype=dtype, device="meta")
        call = partial(mask_to_allowed_triton, logits, rows, allowed)
        yield "64 of 256 rows, vocabulary 128256", dtype, call
