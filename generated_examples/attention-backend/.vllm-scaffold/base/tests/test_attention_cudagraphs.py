"""MyAttnImpl inside captured CUDA graphs: a replay gives the output of an eager call.

Collected by pytest; needs CUDA (the `gpu` marker skips every test here without it) and vLLM. Full CUDA
graphs (`compilation_config={"cudagraph_mode": "FULL_DECODE_ONLY"}`, and the decode half of
FULL_AND_PIECEWISE) record one step's launches with the host values of the batch they were captured on,
then replay them for every later batch of the same size with new contents in the same buffers. Which
batches the builder lets vLLM capture is `MyAttnMetadataBuilder._cudagraph_support`, here
NEVER. Every level above NEVER the builder can declare is checked by capture and replay:
metadata from the builder, the cache write and the attention forward captured with torch.cuda.graph over
static buffers, then new queries, keys, contexts (longer than at capture) and block tables copied in and
the graph replayed. The replay must equal an eager call on the same inputs bit for bit, and the PyTorch
path within the dtype's tolerance. The launches are those `kernels.cuda_launch_configs()` declares, so
`pytest --cuda-arch` compiles them on machines without a GPU.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import pytest
import torch

pytest.importorskip("vllm")

from vllm.v1.attention.backend import AttentionCGSupport, CommonAttentionMetadata  # noqa: E402
from vllm.v1.kv_cache_interface import FullAttentionSpec  # noqa: E402

from my_attn.attention import reference  # noqa: E402
from my_attn.attention.backend import (  # noqa: E402
    KERNELS_ENV,
    MyAttnImpl,
    MyAttnMetadata,
    MyAttnMetadataBuilder,
)
from my_attn.attention.kernels import CUDA_HEAD_SHAPES  # noqa: E402

pytestmark = pytest.mark.gpu

# Query tokens per request of the batches vLLM captures at each level: single-token decodes, and
# speculative-decoding verification (1 + 3 draft tokens; uniform batches also include decodes).
CAPTURED_QUERY_LENS = {
    AttentionCGSupport.UNIFORM_SINGLE_TOKEN_DECODE: [1],
    AttentionCGSupport.UNIFORM_BATCH: [1, 4],
}
CASES = [(level, query_len) for level, lens in CAPTURED_QUERY_LENS.items() for query_len in lens]
MAX_MODEL_LEN = 1024  # with the default 256 keys per split: 4 decode splits, a declared configuration
BLOCK_SIZE = 16
NUM_REQUESTS = 4
TOLERANCES = {torch.float16: (2e-3, 2e-3), torch.bfloat16: (1.6e-2, 1.6e-2)}


@dataclass
class StaticBatch:
    """The buffers a captured graph reads and writes; every batch is copied into them in place."""

    query: torch.Tensor
    key: torch.Tensor
    value: torch.Tensor
    kv_cache: torch.Tensor
    output: torch.Tensor
    query_start_loc: torch.Tensor
    seq_lens: torch.Tensor
    block_table: torch.Tensor
    slot_mapping: torch.Tensor

    @classmethod
    def allocate(
        cls, query_len: int, num_heads: int, num_kv_heads: int, head_size: int, dtype: torch.dtype
    ) -> StaticBatch:
        tokens = NUM_REQUESTS * query_len
        pages = MAX_MODEL_LEN // BLOCK_SIZE
        query = torch.empty(tokens, num_heads, head_size, dtype=dtype, device="cuda")
        key = torch.empty(tokens, num_kv_heads, head_size, dtype=dtype, device="cuda")
        starts = torch.arange(0, tokens + 1, query_len, dtype=torch.int32, device="cuda")
        return cls(
            query=query,
            key=key,
            value=torch.empty_like(key),
            kv_cache=torch.empty(
                NUM_REQUESTS * pages, num_kv_heads, BLOCK_SIZE, 2 * head_size, dtype=dtype, device="cuda"
            ),
            output=torch.empty_like(query),
            query_start_loc=starts,
            seq_lens=torch.empty(NUM_REQUESTS, dtype=torch.int32, device="cuda"),
            block_table=torch.empty(NUM_REQUESTS, pages, dtype=torch.int32, device="cuda"),
            slot_mapping=torch.empty(tokens, dtype=torch.int64, device="cuda"),
        )

    @property
    def query_len(self) -> int:
        return self.query.shape[0] // NUM_REQUESTS

    def load(self, contexts: list[int], seed: int) -> None:
        """A new batch of the same size: random cache, queries, keys and values, shuffled pages."""
        generator = torch.Generator().manual_seed(seed)
        for tensor in (self.query, self.key, self.value, self.kv_cache):
            tensor.copy_(torch.randn(tensor.shape, generator=generator))
        num_blocks = self.kv_cache.shape[0]
        self.block_table.copy_(torch.randperm(num_blocks, generator=generator).view(NUM_REQUESTS, -1))
        self.seq_lens.copy_(torch.tensor(contexts) + self.query_len)
        positions = torch.tensor(contexts)[:, None] + torch.arange(self.query_len)[None, :]
        pages = self.block_table.cpu().gather(1, positions // BLOCK_SIZE)
        self.slot_mapping.copy_((pages * BLOCK_SIZE + positions % BLOCK_SIZE).flatten())

    def common_metadata(self) -> CommonAttentionMetadata:
        """What vLLM's model runner hands the builder for this batch."""
        seq_lens = self.seq_lens.cpu()
        return CommonAttentionMetadata(
            query_start_loc=self.query_start_loc, query_start_loc_cpu=self.query_start_loc.cpu(),
            seq_lens=self.seq_lens, num_reqs=NUM_REQUESTS, num_actual_tokens=self.query.shape[0],
            max_query_len=self.query_len, max_seq_len=int(seq_lens.max()),
            block_table_tensor=self.block_table, slot_mapping=self.slot_mapping,
        )  # fmt: skip

    def step(self, impl: MyAttnImpl, metadata: MyAttnMetadata) -> None:
        """What one attention layer does per engine step: cache write, then forward."""
        impl.do_kv_cache_update(None, self.key, self.value, self.kv_cache, self.slot_mapping)
        impl.forward(None, self.query, self.key, self.value, self.kv_cache, metadata, self.output)

    def reference_output(self, scale: float) -> torch.Tensor:
        out = torch.zeros_like(self.query)
        return reference.paged_attention(
            self.query, self.kv_cache, out, self.query_start_loc, self.seq_lens, self.block_table, scale
        )


def make_builder(num_kv_heads: int, head_size: int, dtype: torch.dtype) -> MyAttnMetadataBuilder:
    spec = FullAttentionSpec(
        block_size=BLOCK_SIZE, num_kv_heads=num_kv_heads, head_size=head_size, dtype=dtype
    )
    config = SimpleNamespace(model_config=SimpleNamespace(max_model_len=MAX_MODEL_LEN))
    return MyAttnMetadataBuilder(spec, ["layers.0.attn"], config, torch.device("cuda"))


def capture(batch: StaticBatch, impl: MyAttnImpl, metadata: MyAttnMetadata) -> torch.cuda.CUDAGraph:
    # A first call on a side stream compiles the Triton kernels: compilation cannot happen inside a capture.
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        batch.step(impl, metadata)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        batch.step(impl, metadata)
    return graph


def launch_shape(metadata: MyAttnMetadata) -> tuple[int, ...]:
    """The host values of a batch that decide which launches `forward` makes, and their grids."""
    return (metadata.num_decodes, metadata.decode_splits, metadata.max_query_len, metadata.num_actual_tokens)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize(("num_heads", "num_kv_heads", "head_size"), CUDA_HEAD_SHAPES)
@pytest.mark.parametrize(("level", "query_len"), CASES, ids=[f"{lv.name}-q{q}" for lv, q in CASES])
def test_replayed_graph_matches_eager_call(
    level: AttentionCGSupport,
    query_len: int,
    num_heads: int,
    num_kv_heads: int,
    head_size: int,
    dtype: torch.dtype,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(KERNELS_ENV, raising=False)  # CUDA tensors: the Triton path
    monkeypatch.setattr(MyAttnMetadataBuilder, "_cudagraph_support", level)
    # Enough programs wanted that every decode splits as far as MAX_MODEL_LEN allows, on any GPU.
    monkeypatch.setattr(MyAttnMetadataBuilder, "split_target_programs", 1 << 12)
    builder = make_builder(num_kv_heads, head_size, dtype)
    scale = head_size**-0.5
    impl = MyAttnImpl(num_heads, head_size, scale, num_kv_heads)
    batch = StaticBatch.allocate(query_len, num_heads, num_kv_heads, head_size, dtype)
    batch.load([3, 40, 17, 100], seed=0)
    captured = builder.build(0, batch.common_metadata())
    # Decodes split as the builder sizes them for max_model_len, not for this batch's short contexts.
    assert captured.decode_splits == (4 if query_len == 1 else 1)
    graph = capture(batch, impl, captured)

    later_contexts = [[MAX_MODEL_LEN - query_len, 517, 64, 0], [250, 1, 999 - query_len, 33]]
    for seed, contexts in enumerate(later_contexts, start=1):
        batch.load(contexts, seed)
        graph.replay()
        replayed = batch.output.clone()
        eager = builder.build(0, batch.common_metadata())
        # The captured launches are the ones an eager step of this batch makes: same grids, same splits.
        assert launch_shape(eager) == launch_shape(captured)
        batch.output.zero_()
        batch.step(impl, eager)
        torch.testing.assert_close(replayed, batch.output, atol=0, rtol=0)
        atol, rtol = TOLERANCES[dtype]
        expected = batch.reference_output(scale)
        torch.testing.assert_close(replayed.float(), expected.float(), atol=atol, rtol=rtol)
