"""The Triton kernels of MyAttnBackend against the PyTorch path (and, on CUDA, against SDPA).

Runs where vLLM is absent: it imports only torch, triton, pytest and the kernel modules. Without CUDA the
kernels run on CPU tensors under TRITON_INTERPRET=1 (set by the test harness), mostly in float32 (half
precision inputs are upcast inside the kernels there), with shapes kept small (the interpreter costs about
a millisecond per program). Tests marked `gpu` check float16 and bfloat16 on CUDA against
scaled_dot_product_attention, with tolerances per dtype.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest
import torch
import torch.nn.functional as F

from my_attn.attention import kernels, reference

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
# (atol, rtol) per dtype; float32 here is what the interpreter checks on CPU.
TOLERANCES = {torch.float32: (2e-5, 1e-5), torch.float16: (2e-3, 2e-3), torch.bfloat16: (1.6e-2, 1.6e-2)}


@dataclass
class Batch:
    """A mixed batch over a paged cache whose pages are shuffled, so block-table indexing is exercised."""

    query: torch.Tensor
    kv_cache: torch.Tensor
    query_start_loc: torch.Tensor
    seq_lens: torch.Tensor
    block_table: torch.Tensor
    query_lens: list[int]

    @property
    def num_decodes(self) -> int:
        return sum(1 for n in self.query_lens if n == 1)


def make_batch(
    query_lens: list[int],
    context_lens: list[int],
    num_heads: int,
    num_kv_heads: int,
    head_size: int,
    block_size: int,
    dtype: torch.dtype = torch.float32,
    seed: int = 0,
) -> Batch:
    generator = torch.Generator().manual_seed(seed)
    seq_lens = [c + q for c, q in zip(context_lens, query_lens, strict=True)]
    pages_per_request = [math.ceil(s / block_size) for s in seq_lens]
    num_blocks = sum(pages_per_request) + 3  # spare pages hold garbage the kernels must never read
    kv_cache = torch.randn(num_blocks, num_kv_heads, block_size, 2 * head_size, generator=generator)
    pages = torch.randperm(num_blocks, generator=generator)
    block_table = torch.zeros(len(seq_lens), max(1, max(pages_per_request)), dtype=torch.int32)
    used = 0
    for request, count in enumerate(pages_per_request):
        block_table[request, :count] = pages[used : used + count]
        used += count
    starts = [0]
    for n in query_lens:
        starts.append(starts[-1] + n)
    query = torch.randn(starts[-1], num_heads, head_size, generator=generator)
    as_int = dict(dtype=torch.int32, device=DEVICE)
    return Batch(
        query=query.to(DEVICE, dtype),
        kv_cache=kv_cache.to(DEVICE, dtype),
        query_start_loc=torch.tensor(starts, **as_int),
        seq_lens=torch.tensor(seq_lens, **as_int),
        block_table=block_table.to(DEVICE),
        query_lens=list(query_lens),
    )


def run_reference(batch: Batch, scale: float, **options) -> torch.Tensor:
    out = torch.zeros_like(batch.query)
    return reference.paged_attention(
        batch.query, batch.kv_cache, out, batch.query_start_loc, batch.seq_lens, batch.block_table, scale,
        **options,
    )  # fmt: skip


def run_triton(batch: Batch, scale: float, num_splits: int = 1, **options) -> torch.Tensor:
    out = torch.zeros_like(batch.query)
    return kernels.paged_attention(
        batch.query, batch.kv_cache, out, batch.query_start_loc, batch.seq_lens, batch.block_table, scale,
        max_query_len=max(batch.query_lens), num_decodes=batch.num_decodes, num_splits=num_splits, **options,
    )  # fmt: skip


def assert_close(actual: torch.Tensor, expected: torch.Tensor) -> None:
    atol, rtol = TOLERANCES[actual.dtype]
    torch.testing.assert_close(actual.float(), expected.float(), atol=atol, rtol=rtol)


# A decode, a request with no query tokens (padding), a chunked prefill, a prefill spanning several pages
# and a decode over a longer context; odd lengths throughout.
QUERY_LENS = [1, 0, 5, 19, 1]
CONTEXT_LENS = [0, 4, 3, 22, 37]


@pytest.mark.parametrize("block_size", [16, 32])
@pytest.mark.parametrize("head_size", [32, 64, 128])
@pytest.mark.parametrize(("num_heads", "num_kv_heads"), [(2, 2), (4, 2), (4, 1)], ids=["mha", "gqa2", "gqa4"])
def test_paged_attention_matches_torch_path(
    num_heads: int, num_kv_heads: int, head_size: int, block_size: int
) -> None:
    batch = make_batch(QUERY_LENS, CONTEXT_LENS, num_heads, num_kv_heads, head_size, block_size)
    scale = head_size**-0.5
    assert_close(run_triton(batch, scale), run_reference(batch, scale))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_inputs(dtype: torch.dtype) -> None:
    # Under the interpreter the kernels upcast what they load to float32 (its bfloat16 arithmetic is wrong);
    # on CUDA they multiply in the input dtype. Either way: within the dtype's tolerance of the torch path.
    batch = make_batch(QUERY_LENS, CONTEXT_LENS, 4, 2, 64, 16, dtype)
    assert_close(run_triton(batch, 0.125, num_splits=2), run_reference(batch, 0.125))


@pytest.mark.parametrize("num_splits", [2, 4])
def test_split_k_decode_matches_torch_path(num_splits: int):
    # Contexts that are not multiples of the tile or of the split size, and one shorter than a split.
    batch = make_batch([1, 1, 1], [150, 37, 5], 4, 2, 64, 16, seed=1)
    scale = 64**-0.5
    assert_close(run_triton(batch, scale, num_splits=num_splits), run_reference(batch, scale))


@pytest.mark.parametrize(
    ("sliding_window", "logits_soft_cap"), [(None, 30.0), (16, None), (7, 5.0)], ids=["cap", "window", "both"]
)
@pytest.mark.parametrize("num_splits", [1, 2])
def test_sliding_window_and_soft_cap(
    sliding_window: int | None, logits_soft_cap: float | None, num_splits: int
) -> None:
    batch = make_batch([1, 9, 33], [40, 13, 0], 4, 2, 32, 16, seed=2)
    options = dict(sliding_window=sliding_window, logits_soft_cap=logits_soft_cap)
    expected = run_reference(batch, 0.3, **options)
    assert_close(run_triton(batch, 0.3, num_splits=num_splits, **options), expected)
    # The options must change the result, or this test would pass with them ignored.
    assert not torch.allclose(expected, run_reference(batch, 0.3), atol=1e-3)


def test_padding_rows_past_the_batch_are_left_untouched():
    batch = make_batch([3, 1], [4, 9], 2, 1, 32, 16)
    num_tokens = batch.query.shape[0]
    padded = torch.cat([batch.query, torch.zeros_like(batch.query[:2])])
    out = torch.full_like(padded, 7.0)
    kernels.paged_attention(
        padded[:num_tokens], batch.kv_cache, out[:num_tokens], batch.query_start_loc, batch.seq_lens,
        batch.block_table, 0.2, max_query_len=3, num_decodes=1,
    )  # fmt: skip
    assert torch.all(out[num_tokens:] == 7.0)
    assert_close(out[:num_tokens], run_reference(batch, 0.2))


@pytest.mark.parametrize("block_size", [16, 32])
@pytest.mark.parametrize("head_size", [32, 128])
def test_write_kv_cache_matches_torch_path(head_size: int, block_size: int):
    generator = torch.Generator().manual_seed(3)
    num_tokens, num_kv_heads, num_blocks = 37, 2, 5
    key = torch.randn(num_tokens, num_kv_heads, head_size, generator=generator).to(DEVICE)
    value = torch.randn(num_tokens, num_kv_heads, head_size, generator=generator).to(DEVICE)
    slots = torch.randperm(num_blocks * block_size, generator=generator)[:num_tokens]
    slots[::5] = -1  # padding tokens
    slots = slots.to(DEVICE)
    expected = torch.zeros(num_blocks, num_kv_heads, block_size, 2 * head_size, device=DEVICE)
    actual = expected.clone()
    reference.write_kv_cache(key, value, expected, slots)
    kernels.write_kv_cache(key, value, actual, slots)
    torch.testing.assert_close(actual, expected, atol=0, rtol=0)
    # Every valid token landed, keys in the first half of the channels and values in the second.
    token = int(torch.nonzero(slots >= 0)[0])
    block, offset = divmod(int(slots[token]), block_size)
    torch.testing.assert_close(actual[block, :, offset, :head_size], key[token])
    torch.testing.assert_close(actual[block, :, offset, head_size:], value[token])
    assert int((actual.abs().sum(dim=(1, 3)) > 0).sum()) == int((slots >= 0).sum())


def test_kernels_read_a_cache_with_token_major_strides():
    # vLLM may hand each layer a [blocks, kv_heads, block_size, 2 * head] view whose memory is token-major.
    batch = make_batch([4, 1], [9, 20], 4, 2, 32, 16, seed=4)
    token_major = batch.kv_cache.transpose(1, 2).contiguous().transpose(1, 2)
    assert token_major.stride() != batch.kv_cache.stride()
    strided = Batch(**{**batch.__dict__, "kv_cache": token_major})
    assert_close(run_triton(strided, 0.25), run_reference(batch, 0.25))


def test_decode_split_heuristic():
    # No split when the requests alone fill the device, or for short contexts; powers of two, capped.
    assert kernels.decode_splits(4096, 64, 8, target_programs=264) == 1
    assert kernels.decode_splits(100, 1, 8, target_programs=264) == 1
    assert kernels.decode_splits(4096, 2, 8, target_programs=264) == 16
    assert kernels.decode_splits(1024, 2, 8, target_programs=264) == 4
    assert kernels.decode_splits(4096, 1, 1, target_programs=0) == 1


def sdpa_oracle(batch: Batch, scale: float) -> torch.Tensor:
    """Each request through torch's scaled_dot_product_attention on the gathered keys and values."""
    out = torch.empty_like(batch.query)
    starts = batch.query_start_loc.tolist()
    num_heads, head_size = batch.query.shape[1:]
    group = num_heads // batch.kv_cache.shape[1]
    for request, seq_len in enumerate(batch.seq_lens.tolist()):
        q_start, q_end = starts[request], starts[request + 1]
        if q_end == q_start:
            continue
        keys, values = reference.gather_kv(batch.kv_cache, batch.block_table[request], seq_len, head_size)
        q_pos = torch.arange(seq_len - (q_end - q_start), seq_len, device=DEVICE)[:, None]
        mask = torch.arange(seq_len, device=DEVICE)[None, :] <= q_pos
        attended = F.scaled_dot_product_attention(
            batch.query[q_start:q_end].transpose(0, 1).float(),
            keys.float().repeat_interleave(group, 0),
            values.float().repeat_interleave(group, 0),
            attn_mask=mask,
            scale=scale,
        )
        out[q_start:q_end] = attended.transpose(0, 1).to(out.dtype)
    return out


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize(("num_heads", "num_kv_heads", "head_size"), [(8, 8, 64), (32, 8, 128), (16, 4, 96)])
def test_paged_attention_on_cuda_matches_sdpa(
    dtype: torch.dtype, num_heads: int, num_kv_heads: int, head_size: int
) -> None:
    query_lens, context_lens = [1, 77, 1, 300, 2], [1000, 0, 513, 129, 61]
    batch = make_batch(query_lens, context_lens, num_heads, num_kv_heads, head_size, 16, dtype)
    scale = head_size**-0.5
    expected = sdpa_oracle(batch, scale)
    assert_close(run_triton(batch, scale), expected)
    assert_close(run_triton(batch, scale, num_splits=8), expected)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_write_kv_cache_on_cuda(dtype: torch.dtype):
    key = torch.randn(300, 8, 128, device=DEVICE, dtype=dtype)
    value = torch.randn_like(key)
    slots = torch.randperm(64 * 16, device=DEVICE)[:300]
    slots[-7:] = -1
    expected = torch.zeros(64, 8, 16, 256, device=DEVICE, dtype=dtype)
    actual = expected.clone()
    reference.write_kv_cache(key, value, expected, slots)
    kernels.write_kv_cache(key, value, actual, slots)
    torch.testing.assert_close(actual, expected, atol=0, rtol=0)


def test_traffic_matches_a_hand_count() -> None:
    """1 request, context 4, the last 2 tokens queries, 2 query heads on 1 KV head of size 8, fp16: K and V of
    4 tokens (2 x 4 x 8 x 2 bytes), queries read and output written (2 x 2 x 2 x 8 x 2 bytes); the queries
    attend 3 and 4 keys, 7 pairs x 2 heads x 8 x (2 + 2) FLOPs."""
    assert kernels.traffic(1, 4, 2, 2, 1, 8, torch.float16) == (128 + 128, 7 * 2 * 8 * 4)
