"""The PyTorch path of the attention backend: paged KV-cache writes and paged attention in plain torch.

Loaded by the vLLM worker when the backend runs with the torch path (the default on devices other than CUDA),
and by the kernel tests as the oracle the Triton kernels are checked against. It imports only torch, so the
tests run where vLLM is absent. Every function here is written for clarity, not speed: one request at a time,
softmax in float32.

KV-cache layout (each attention layer's view): [num_blocks, num_kv_heads, block_size, 2 * head_size], keys in
the first head_size channels of the last dimension and values in the second; any strides.
"""

from __future__ import annotations

import torch


def write_kv_cache(
    key: torch.Tensor, value: torch.Tensor, kv_cache: torch.Tensor, slot_mapping: torch.Tensor
) -> None:
    """Writes key/value [num_tokens, num_kv_heads, head_size] into `kv_cache` at `slot_mapping` (-1: skip)."""
    num_slots = slot_mapping.shape[0]
    head_size = key.shape[-1]
    slots = slot_mapping.to(torch.long)
    valid = slots >= 0
    slots = slots[valid]
    blocks, offsets = slots // kv_cache.shape[2], slots % kv_cache.shape[2]
    kv_cache[blocks, :, offsets, :head_size] = key[:num_slots][valid].to(kv_cache.dtype)
    kv_cache[blocks, :, offsets, head_size:] = value[:num_slots][valid].to(kv_cache.dtype)


def gather_kv(
    kv_cache: torch.Tensor, block_table_row: torch.Tensor, seq_len: int, head_size: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """The first `seq_len` keys and values of one request: two [num_kv_heads, seq_len, head_size] tensors."""
    block_size = kv_cache.shape[2]
    num_blocks = -(-seq_len // block_size)
    pages = kv_cache[block_table_row[:num_blocks].to(torch.long)]  # [blocks, kv_heads, block_size, 2 * head]
    pages = pages.permute(1, 0, 2, 3).reshape(kv_cache.shape[1], num_blocks * block_size, 2 * head_size)
    return pages[:, :seq_len, :head_size], pages[:, :seq_len, head_size:]


def paged_attention(
    query: torch.Tensor,
    kv_cache: torch.Tensor,
    output: torch.Tensor,
    query_start_loc: torch.Tensor,
    seq_lens: torch.Tensor,
    block_table: torch.Tensor,
    scale: float,
    sliding_window: int | None = None,
    logits_soft_cap: float | None = None,
) -> torch.Tensor:
    """Causal attention of query [num_tokens, num_heads, head_size] over the paged cache, into `output`.

    Request r owns query rows query_start_loc[r]:query_start_loc[r + 1]; its keys are the first seq_lens[r]
    cache positions named by block_table[r], and its queries are the last positions of that sequence. With a
    sliding window W a query at position p sees keys p - W < k <= p; a soft cap c maps each logit s to
    c * tanh(s / c). Rows of `output` past query_start_loc[-1] (padding) are left untouched.
    """
    num_heads, head_size = query.shape[1], query.shape[2]
    group = num_heads // kv_cache.shape[1]
    starts = query_start_loc.tolist()
    lengths = seq_lens.tolist()
    for request, seq_len in enumerate(lengths):
        q_start, q_end = starts[request], starts[request + 1]
        query_len = q_end - q_start
        if query_len == 0:
            continue
        keys, values = gather_kv(kv_cache, block_table[request], seq_len, head_size)
        keys = keys.float().repeat_interleave(group, dim=0)
        values = values.float().repeat_interleave(group, dim=0)
        q = query[q_start:q_end].float().transpose(0, 1)  # [num_heads, query_len, head_size]
        scores = torch.matmul(q, keys.transpose(1, 2)) * scale
        if logits_soft_cap:
            scores = logits_soft_cap * torch.tanh(scores / logits_soft_cap)
        q_pos = torch.arange(seq_len - query_len, seq_len, device=query.device)[:, None]
        k_pos = torch.arange(seq_len, device=query.device)[None, :]
        visible = k_pos <= q_pos
        if sliding_window:
            visible &= q_pos - k_pos < sliding_window
        scores = scores.masked_fill(~visible, float("-inf"))
        out = torch.matmul(torch.softmax(scores, dim=-1), values)
        output[q_start:q_end] = out.transpose(0, 1).to(output.dtype)
    return output
