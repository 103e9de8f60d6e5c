"""Triton kernels of the attention backend: paged KV-cache writes and paged attention.

Loaded by the vLLM worker when the backend runs its Triton path (the default on CUDA), by the kernel tests,
and by the benchmark. It imports only torch and triton, so the kernel tests run where vLLM is absent; on a
machine without CUDA they run on CPU tensors under TRITON_INTERPRET=1.

KV-cache layout (each attention layer's view): [num_blocks, num_kv_heads, block_size, 2 * head_size], keys in
the first head_size channels of the last dimension and values in the second. The kernels take the strides of
the first three dimensions, so any physical layout vLLM negotiates works; the channel dimension is contiguous.

- `write_kv_cache`: scatters new keys and values into the cache through the slot mapping (-1: padding).
- `paged_attention`: causal attention for a mixed batch, all through `_paged_attention_kernel`, which packs
  BLOCK_Q query tokens x the query heads of one KV head into the rows of one tile (grouped-query attention
  reads each key once per group). Requests with more than one query token (prefills, chunked prefills) take
  one launch; single-token requests (decodes) another, with BLOCK_Q = 1, which splits a long context over
  NUM_SPLITS programs (split-K, "flash decoding") whose partial results `_merge_splits_kernel` combines.
- Optional sliding window and logits soft cap are compile-time switches of the same kernel.
- `cuda_launch_configs()`: the launches the CUDA path makes for each dtype and head shape the GPU tests cover,
  which `pytest --cuda-arch` compiles for real GPUs.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

import torch
import triton
import triton.language as tl

# Keys per inner-loop tile. 16 is the smallest tile tl.dot accepts.
TILE_N = 32
# Query tokens per prefill program (times the padded query heads of one KV group: the rows of a tile).
BLOCK_Q = 16
MIN_DOT = 16
MAX_SPLITS = 16


def interpreting() -> bool:
    """True when Triton runs kernels through its CPU interpreter (TRITON_INTERPRET=1)."""
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


def compute_dtype(dtype: torch.dtype) -> tl.dtype:
    """The dtype the kernels multiply in: the input's on a GPU; float32 under the interpreter, whose
    arithmetic on bfloat16 values is wrong (numpy has no bfloat16)."""
    if interpreting() or dtype == torch.float32:
        return tl.float32
    return {torch.float16: tl.float16, torch.bfloat16: tl.bfloat16}[dtype]


def decode_splits(
    max_seq_len: int,
    num_requests: int,
    num_kv_heads: int,
    target_programs: int,
    min_tokens_per_split: int = 256,
) -> int:
    """How many programs share one decode's context: enough to give the device `target_programs` programs,
    with at least `min_tokens_per_split` keys each; a power of two, at most MAX_SPLITS."""
    programs = max(1, num_requests * num_kv_heads)
    wanted = min(
        triton.cdiv(target_programs, programs), max_seq_len // max(1, min_tokens_per_split), MAX_SPLITS
    )
    return 1 << (max(1, wanted).bit_length() - 1)


@triton.jit
def _write_kv_cache_kernel(
    key_ptr,
    value_ptr,
    cache_ptr,
    slot_ptr,
    num_tokens,
    block_size,
    stride_kt,
    stride_kh,
    stride_vt,
    stride_vh,
    stride_cb,
    stride_ch,
    stride_cn,
    HEAD_SIZE: tl.constexpr,
    HEAD_PAD: tl.constexpr,
    TOKENS: tl.constexpr,
):
    tokens = tl.program_id(0) * TOKENS + tl.arange(0, TOKENS)
    head = tl.program_id(1)
    channels = tl.arange(0, HEAD_PAD)
    slots = tl.load(slot_ptr + tokens, mask=tokens < num_tokens, other=-1).to(tl.int64)
    valid = (tokens < num_tokens) & (slots >= 0)
    mask = valid[:, None] & (channels < HEAD_SIZE)[None, :]
    rows = tokens.to(tl.int64)[:, None]
    key = tl.load(key_ptr + rows * stride_kt + head * stride_kh + channels[None, :], mask=mask)
    value = tl.load(value_ptr + rows * stride_vt + head * stride_vh + channels[None, :], mask=mask)
    blocks = slots // block_size
    offsets = slots % block_size
    dest = (
        cache_ptr
        + blocks[:, None] * stride_cb
        + head * stride_ch
        + offsets[:, None] * stride_cn
        + channels[None, :]
    )
    tl.store(dest, key.to(cache_ptr.dtype.element_ty), mask=mask)
    tl.store(dest + HEAD_SIZE, value.to(cache_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _soft_cap(scores, cap):
    # cap * tanh(scores / cap), with tanh written through exp (libdevice is not available everywhere).
    return cap * (1.0 - 2.0 / (tl.exp(2.0 * scores / cap) + 1.0))


@triton.jit
def _paged_attention_kernel(
    q_ptr,
    cache_ptr,
    out_ptr,
    part_acc_ptr,
    part_ml_ptr,
    query_start_ptr,
    seq_lens_ptr,
    block_table_ptr,
    scale,
    soft_cap,
    sliding_window,
    block_size,
    num_heads,
    stride_qt,
    stride_qh,
    stride_ot,
    stride_oh,
    stride_bt,
    stride_cb,
    stride_ch,
    stride_cn,
    GROUP: tl.constexpr,
    GROUP_PAD: tl.constexpr,
    BLOCK_Q: tl.constexpr,
    NUM_SPLITS: tl.constexpr,
    DECODES_ONLY: tl.constexpr,
    SKIP_DECODES: tl.constexpr,
    HEAD_SIZE: tl.constexpr,
    HEAD_PAD: tl.constexpr,
    TILE: tl.constexpr,
    USE_SOFT_CAP: tl.constexpr,
    USE_WINDOW: tl.constexpr,
    DTYPE: tl.constexpr,
    PRECISION: tl.constexpr,
):
    """Online softmax of BLOCK_Q query tokens of one request x the GROUP query heads of one KV head (the
    BLOCK_Q * GROUP_PAD rows of a tile) over the keys those tokens see, or over one of NUM_SPLITS shares of
    them.

    Grid: (requests, query blocks x NUM_SPLITS, KV heads). A decode is the case BLOCK_Q = 1 of a one-token
    request; only then may NUM_SPLITS exceed 1, and each program writes its unnormalised partial result for
    `_merge_splits_kernel` instead of the output. DECODES_ONLY / SKIP_DECODES pick the requests a launch
    serves (single-token ones / all others; neither: all).

    Occupancy of the prefill launch (BLOCK_Q 16, 4 warps, TILE 32), the price of reading each key/value tile
    once for BLOCK_Q * GROUP_PAD query rows: at GQA-4 and head size 128 (16-bit) a program keeps a 64 x 128
    float32 accumulator, the 64 x 128 query tile and 64 x TILE scores in registers. ptxas figures (the test
    harness's `vllm_scaffold_testing.cuda_report`, no spill in any of them unless stated), as registers per
    thread / occupancy on sm_80 and sm_90:

    | prefill configuration          | sm_80     | sm_90     | cost                                   |
    | ---                            | ---       | ---       | ---                                    |
    | BLOCK_Q 16, 4 warps, TILE 32   | 184 / 12% | 147 / 19% | (this one)                             |
    | BLOCK_Q 16, 8 warps, TILE 32   | 128 / 25% | 100 / 25% | spills 8 bytes per thread on sm_80     |
    | BLOCK_Q 8, 4 warps, TILE 32    | 138 / 19% | 135 / 19% | reads the cache twice as often         |
    | BLOCK_Q 16, 4 warps, TILE 16   | 185 / 12% | 127 / 25% | twice the loop trips, narrower tl.dot  |
    | BLOCK_Q 8, 4 warps, TILE 16    | 120 / 25% | 117 / 25% | both costs                             |

    None of them passes 25 %: the accumulator alone takes 64 registers per thread at four warps. Higher
    occupancy is bought with more cache reads, more loop trips or spills, and none of these figures is a
    GPU measurement: run the benchmark (benchmarks/) on the target GPU before changing BLOCK_Q, TILE_N or
    num_warps.
    """
    request = tl.program_id(0)
    q_block = tl.program_id(1) // NUM_SPLITS
    split = tl.program_id(1) % NUM_SPLITS
    kv_head = tl.program_id(2)
    q_start = tl.load(query_start_ptr + request)
    query_len = tl.load(query_start_ptr + request + 1) - q_start
    if q_block * BLOCK_Q >= query_len:
        return
    if DECODES_ONLY and query_len != 1:
        return
    if SKIP_DECODES and query_len == 1:
        return
    seq_len = tl.load(seq_lens_ptr + request)
    context_len = seq_len - query_len

    rows = tl.arange(0, BLOCK_Q * GROUP_PAD)
    q_index = q_block * BLOCK_Q + rows // GROUP_PAD
    heads = kv_head * GROUP + rows % GROUP_PAD
    row_mask = (q_index < query_len) & (rows % GROUP_PAD < GROUP)
    channels = tl.arange(0, HEAD_PAD)
    channel_mask = channels < HEAD_SIZE
    io_mask = row_mask[:, None] & channel_mask[None, :]
    tokens = (q_start + q_index).to(tl.int64)
    q = tl.load(
        q_ptr + tokens[:, None] * stride_qt + heads[:, None] * stride_qh + channels[None, :],
        mask=io_mask,
        other=0.0,
    ).to(DTYPE)
    q_pos = context_len + q_index

    # Keys [kv_lo, kv_hi): up to the block's last query, from the window start of its first query.
    kv_hi = context_len + tl.minimum(query_len, (q_block + 1) * BLOCK_Q)
    kv_lo = 0
    if USE_WINDOW:
        kv_lo = tl.maximum(context_len + q_block * BLOCK_Q - sliding_window + 1, 0)
    if NUM_SPLITS > 1:
        tiles_per_split = tl.cdiv(tl.cdiv(kv_hi - kv_lo, TILE), NUM_SPLITS)
        kv_lo = kv_lo + split * tiles_per_split * TILE
        kv_hi = tl.minimum(kv_hi, kv_lo + tiles_per_split * TILE)

    acc = tl.zeros([BLOCK_Q * GROUP_PAD, HEAD_PAD], dtype=tl.float32)
    m_i = tl.full([BLOCK_Q * GROUP_PAD], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_Q * GROUP_PAD], dtype=tl.float32)
    for start in range((kv_lo // TILE) * TILE, kv_hi, TILE):
        positions = start + tl.arange(0, TILE)
        in_range = (positions >= kv_lo) & (positions < kv_hi)
        pages = tl.load(
            block_table_ptr + request * stride_bt + positions // block_size, mask=in_range, other=0
        )
        base = (
            cache_ptr
            + pages.to(tl.int64)[:, None] * stride_cb
            + kv_head * stride_ch
            + (positions % block_size)[:, None] * stride_cn
            + channels[None, :]
        )
        tile_mask = in_range[:, None] & channel_mask[None, :]
        keys = tl.load(base, mask=tile_mask, other=0.0).to(DTYPE)
        values = tl.load(base + HEAD_SIZE, mask=tile_mask, other=0.0).to(DTYPE)
        scores = tl.dot(q, tl.trans(keys), input_precision=PRECISION) * scale
        if USE_SOFT_CAP:
            scores = _soft_cap(scores, soft_cap)
        visible = in_range[None, :] & (positions[None, :] <= q_pos[:, None])
        if USE_WINDOW:
            visible = visible & (q_pos[:, None] - positions[None, :] < sliding_window)
        scores = tl.where(visible, scores, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(scores, axis=1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        probs = tl.exp(scores - m_safe[:, None])
        alpha = tl.exp(m_i - m_safe)
        l_i = l_i * alpha + tl.sum(probs, axis=1)
        acc = acc * alpha[:, None] + tl.dot(probs.to(DTYPE), values, input_precision=PRECISION)
        m_i = m_new

    if NUM_SPLITS == 1:
        out = acc / tl.where(l_i == 0.0, 1.0, l_i)[:, None]
        tl.store(
            out_ptr + tokens[:, None] * stride_ot + heads[:, None] * stride_oh + channels[None, :],
            out.to(out_ptr.dtype.element_ty),
            mask=io_mask,
        )
    else:
        # Partial results, [num_requests, num_heads, NUM_SPLITS, HEAD_PAD] and [.., NUM_SPLITS, 2] (max, sum).
        slot = (request * num_heads + heads).to(tl.int64) * NUM_SPLITS + split
        tl.store(part_acc_ptr + slot[:, None] * HEAD_PAD + channels[None, :], acc, mask=io_mask)
        tl.store(part_ml_ptr + slot * 2, m_i, mask=row_mask)
        tl.store(part_ml_ptr + slot * 2 + 1, l_i, mask=row_mask)


@triton.jit
def _merge_splits_kernel(
    out_ptr,
    part_acc_ptr,
    part_ml_ptr,
    query_start_ptr,
    num_heads,
    stride_ot,
    stride_oh,
    NUM_SPLITS: tl.constexpr,
    HEAD_SIZE: tl.constexpr,
    HEAD_PAD: tl.constexpr,
):
    request = tl.program_id(0)
    head = tl.program_id(1)
    q_start = tl.load(query_start_ptr + request)
    if tl.load(query_start_ptr + request + 1) - q_start != 1:
        return
    splits = tl.arange(0, NUM_SPLITS)
    channels = tl.arange(0, HEAD_PAD)
    slot = (request * num_heads + head).to(tl.int64) * NUM_SPLITS + splits
    m = tl.load(part_ml_ptr + slot * 2)
    total = tl.load(part_ml_ptr + slot * 2 + 1)
    acc = tl.load(part_acc_ptr + slot[:, None] * HEAD_PAD + channels[None, :])
    m_max = tl.max(m, axis=0)
    weights = tl.where(m == float("-inf"), 0.0, tl.exp(m - m_max))
    out = tl.sum(acc * weights[:, None], axis=0) / tl.sum(total * weights, axis=0)
    tl.store(
        out_ptr + q_start.to(tl.int64) * stride_ot + head * stride_oh + channels,
        out.to(out_ptr.dtype.element_ty),
        mask=channels < HEAD_SIZE,
    )


def write_kv_cache(
    key: torch.Tensor, value: torch.Tensor, kv_cache: torch.Tensor, slot_mapping: torch.Tensor
) -> None:
    """Writes key/value [num_tokens, num_kv_heads, head_size] into `kv_cache` at `slot_mapping` (-1: skip)."""
    num_tokens = slot_mapping.shape[0]
    if num_tokens == 0:
        return
    num_kv_heads, head_size = key.shape[1], key.shape[2]
    tokens = 16
    grid = (triton.cdiv(num_tokens, tokens), num_kv_heads)
    _write_kv_cache_kernel[grid](
        key,
        value,
        kv_cache,
        slot_mapping,
        num_tokens,
        kv_cache.shape[2],
        key.stride(0),
        key.stride(1),
        value.stride(0),
        value.stride(1),
        kv_cache.stride(0),
        kv_cache.stride(1),
        kv_cache.stride(2),
        HEAD_SIZE=head_size,
        HEAD_PAD=triton.next_power_of_2(head_size),
        TOKENS=tokens,
    )


def paged_attention(
    query: torch.Tensor,
    kv_cache: torch.Tensor,
    output: torch.Tensor,
    query_start_loc: torch.Tensor,
    seq_lens: torch.Tensor,
    block_table: torch.Tensor,
    scale: float,
    *,
    max_query_len: int,
    num_decodes: int,
    num_splits: int = 1,
    sliding_window: int | None = None,
    logits_soft_cap: float | None = None,
) -> torch.Tensor:
    """Causal attention of query [num_tokens, num_heads, head_size] over the paged cache, into `output`.

    Same contract as `reference.paged_attention`. `max_query_len` and `num_decodes` (requests with one query
    token) are host-side facts of the batch that size the grids; `num_splits` (a power of two) splits each
    decode's context over that many programs.
    """
    num_requests = seq_lens.shape[0]
    num_heads, head_size = query.shape[1], query.shape[2]
    num_kv_heads = kv_cache.shape[1]
    group = num_heads // num_kv_heads
    head_pad = max(MIN_DOT, triton.next_power_of_2(head_size))
    dtype = compute_dtype(query.dtype)
    part_acc = part_ml = output  # unused unless a decode launch splits its keys
    if num_decodes and num_splits > 1:
        partials = num_requests * num_heads * num_splits
        part_acc = torch.empty(partials * head_pad, dtype=torch.float32, device=query.device)
        part_ml = torch.empty(partials * 2, dtype=torch.float32, device=query.device)

    def launch(programs_per_request: int, **config: object) -> None:
        # Grid: (requests, query blocks x splits, KV heads); `config` completes the compile-time switches.
        _paged_attention_kernel[(num_requests, programs_per_request, num_kv_heads)](
            query,
            kv_cache,
            output,
            part_acc,
            part_ml,
            query_start_loc,
            seq_lens,
            block_table,
            scale,
            float(logits_soft_cap or 0.0),
            int(sliding_window or 0),
            kv_cache.shape[2],
            num_heads,
            query.stride(0),
            query.stride(1),
            output.stride(0),
            output.stride(1),
            block_table.stride(0),
            kv_cache.stride(0),
            kv_cache.stride(1),
            kv_cache.stride(2),
            GROUP=group,
            HEAD_SIZE=head_size,
            HEAD_PAD=head_pad,
            TILE=TILE_N,
            USE_SOFT_CAP=bool(logits_soft_cap),
            USE_WINDOW=bool(sliding_window),
            DTYPE=dtype,
            PRECISION="ieee" if dtype == tl.float32 else "tf32",
            **config,
        )

    if num_decodes:
        # One query token: the tile's rows are the group's heads, padded to the smallest tl.dot operand.
        launch(
            num_splits,
            GROUP_PAD=max(MIN_DOT, triton.next_power_of_2(group)),
            BLOCK_Q=1,
            NUM_SPLITS=num_splits,
            DECODES_ONLY=True,
            SKIP_DECODES=False,
        )
        if num_splits > 1:
            _merge_splits_kernel[(num_requests, num_heads)](
                output,
                part_acc,
                part_ml,
                query_start_loc,
                num_heads,
                output.stride(0),
                output.stride(1),
                NUM_SPLITS=num_splits,
                HEAD_SIZE=head_size,
                HEAD_PAD=head_pad,
            )
    if num_decodes < num_requests:
        group_pad = triton.next_power_of_2(group)
        block_q = max(BLOCK_Q, MIN_DOT // group_pad)
        launch(
            triton.cdiv(max_query_len, block_q),
            GROUP_PAD=group_pad,
            BLOCK_Q=block_q,
            NUM_SPLITS=1,
            DECODES_ONLY=False,
            SKIP_DECODES=num_decodes > 0,
            # float32 tiles multiply exactly on the FMA units ("ieee"), which hold the whole 64 x 128 GQA
            # tile in registers: four warps need over 255 registers per thread and spill kilobytes of them.
            # At 16 bits four warps: the register and occupancy trade is in the kernel's docstring.
            num_warps=8 if dtype == tl.float32 else 4,
        )
    return output


# (query heads, KV heads, head size) of the GPU tests: MHA at 64, GQA-4 at 128, GQA-4 at a padded 96.
CUDA_HEAD_SHAPES: tuple[tuple[int, int, int], ...] = ((8, 8, 64), (32, 8, 128), (16, 4, 96))


def traffic(
    batch: int,
    context: int,
    query_len: int,
    num_heads: int,
    num_kv_heads: int,
    head_size: int,
    dtype: torch.dtype,
) -> tuple[int, int]:
    """(bytes, FLOPs) of `paged_attention` on `batch` requests of `context` tokens whose last `query_len` are
    queries, causal, no sliding window: the K and V of every cached token read once per KV head, the queries
    read and the output written (the block table, sequence metadata and split-K partials are left out). A
    query at position p attends p + 1 keys; QK^T and PV are 2 FLOPs per multiply-add each."""
    kv_bytes = 2 * batch * context * num_kv_heads * head_size * dtype.itemsize
    query_bytes = 2 * batch * query_len * num_heads * head_size * dtype.itemsize
    pairs = query_len * (context - query_len) + query_len * (query_len + 1) // 2
    return kv_bytes + query_bytes, 4 * batch * num_heads * head_size * pairs


def cuda_launch_configs() -> Iterator[tuple[str, torch.dtype, Callable[[], object]]]:
    """Each dtype x head shape as calls of the host code on shape-only ("meta") tensors (case, dtype, call): a
    cache write, a mixed batch (prefill and single-program decode), a split decode batch and a uniform batch
    of four-token queries (no decode: the prefill launch serves every request). The test
    harness records the launches each call makes and compiles them for real GPUs."""
    # The last two are the batches CUDA graphs capture (uniform decodes, uniform spec-decode verification).
    batches = (("prefill + decode", [64, 1], 1), ("split decode", [1, 1], 4), ("uniform batch", [4, 4], 1))
    for dtype in (torch.float16, torch.bfloat16, torch.float32):
        for num_heads, num_kv_heads, head_size in CUDA_HEAD_SHAPES:
            shape = f"{num_heads}/{num_kv_heads} heads of {head_size}"
            yield f"cache write, {shape}", dtype, _cache_write_call(num_kv_heads, head_size, dtype)
            for case, query_lens, splits in batches:
                call = _attention_call(query_lens, num_heads, num_kv_heads, head_size, dtype, splits)
                yield f"{case}, {shape}", dtype, call


def _meta(*shape: int, dtype: torch.dtype) -> torch.Tensor:
    return torch.empty(shape, dtype=dtype, device="meta")


def _cache_write_call(num_kv_heads: int, head_size: int, dtype: torch.dtype) -> Callable[[], None]:
    tokens = (64, num_kv_heads, head_size)
    cache = _meta(128, num_kv_heads, 16, 2 * head_size, dtype=dtype)
    return lambda: write_kv_cache(
        _meta(*tokens, dtype=dtype), _meta(*tokens, dtype=dtype), cache, _meta(64, dtype=torch.int64)
    )


def _attention_call(
    query_lens: list[int],
    num_heads: int,
    num_kv_heads: int,
    head_size: int,
    dtype: torch.dtype,
    num_splits: int,
    context: int = 1024,
    block_size: int = 16,
) -> Callable[[], object]:
    num_tokens, num_requests = sum(query_lens), len(query_lens)
    pages = triton.cdiv(context + max(query_lens), block_size)
    query = _meta(num_tokens, num_heads, head_size, dtype=dtype)
    return lambda: paged_attention(
        query,
        _meta(num_requests * pages, num_kv_heads, block_size, 2 * head_size, dtype=dtype),
        _meta(num_tokens, num_heads, head_size, dtype=dtype),
        _meta(num_requests + 1, dtype=torch.int32),
        _meta(num_requests, dtype=torch.int32),
        _meta(num_requests, pages, dtype=torch.int32),
        head_size**-0.5,
        max_query_len=max(query_lens),
        num_decodes=query_lens.count(1),
        num_splits=num_splits,
    )
