"""The CUSTOM attention backend: MyAttnBackend, its metadata builder and its impl.

Imported by each vLLM worker when it builds the model's attention layers and the selected backend resolves
to this class (registered by `my_attn.attention.registration`). Per engine step the worker turns the batch
into metadata with `MyAttnMetadataBuilder.build`, then every attention layer calls
`MyAttnImpl.do_kv_cache_update` (new keys and values into the paged cache) before `MyAttnImpl.forward`
(attention over the cache).

Each layer's KV cache is a [num_blocks, num_kv_heads, block_size, 2 * head_size] view (keys in the first
head_size channels, values in the rest) in whatever physical layout vLLM negotiated; both kernel paths take
strides. vLLM 0.32 has no `get_kv_cache_shape`: the shape comes from the KV-cache spec, the layout from
`supported_kv_cache_layouts`.

Kernel paths: the Triton kernels in `kernels.py`, or the plain PyTorch code in `reference.py` (the
tests' oracle). The environment variable MY_ATTN_ATTENTION_KERNELS=triton|torch picks one; unset, CUDA
tensors take the Triton path and anything else the PyTorch path.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from typing import ClassVar

import torch
from vllm.config import VllmConfig
from vllm.v1.attention.backend import (
    AttentionBackend,
    AttentionCGSupport,
    AttentionImpl,
    AttentionLayer,
    AttentionMetadataBuilder,
    AttentionType,
    CommonAttentionMetadata,
    MultipleOf,
)
from vllm.v1.kv_cache_interface import AttentionSpec, KVCacheLayout

from my_attn.attention import kernels, reference

KERNELS_ENV = "MY_ATTN_ATTENTION_KERNELS"
KERNEL_PATHS = ("triton", "torch")
SUPPORTS_SLIDING_WINDOW = True
SUPPORTS_LOGITS_SOFT_CAP = True

# What ran in this process, by name: "build" (metadata builds), "split_decode" (builds that split decodes
# over several programs), "kv_update", "torch" and "triton" (forward calls per path). Cheap enough to keep
# in production; the tests use it to prove the engine reached this backend rather than a fallback.
CALLS: Counter[str] = Counter()


def worker_calls(model: torch.nn.Module | None = None) -> dict[str, int]:
    """CALLS of this process. `llm.apply_model(worker_calls)` collects them from every worker."""
    return dict(CALLS)


class MyAttnBackend(AttentionBackend):
    """Capabilities vLLM checks before choosing this backend (CUDA and ROCm reject what it does not claim)."""

    # The KV cache is written by do_kv_cache_update, a separate op vLLM calls before forward.
    forward_includes_kv_cache_update: bool = False
    # The kernels multiply in the model dtype (float32 too: the CPU engine's tests run in it).
    supported_dtypes: ClassVar[list[torch.dtype]] = [torch.float16, torch.bfloat16, torch.float32]
    # "auto" stores the model dtype; float16/bfloat16 caches are converted on write and on read. No fp8:
    # the kernels do not apply k/v scales.
    supported_kv_cache_dtypes: ClassVar[list[str]] = ["auto", "float16", "bfloat16"]

    @staticmethod
    def get_name() -> str:
        # Must be a member name of AttentionBackendEnum: the attention layer looks itself up by it.
        return "CUSTOM"

    @staticmethod
    def get_impl_cls() -> type[MyAttnImpl]:
        return MyAttnImpl

    @staticmethod
    def get_builder_cls() -> type[MyAttnMetadataBuilder]:
        return MyAttnMetadataBuilder

    @staticmethod
    def get_supported_kernel_block_sizes(
        kv_cache_spec: AttentionSpec | None = None,
    ) -> list[int | MultipleOf]:
        # Keys are gathered one cache position at a time through the block table, so any page size works.
        return [MultipleOf(1)]

    @classmethod
    def get_supported_head_sizes(cls) -> list[int]:
        # Heads are padded to a power of two inside the kernels; tl.dot needs at least 16 channels.
        return list(range(16, 257, 16))

    @classmethod
    def supported_kv_cache_layouts(cls) -> tuple[KVCacheLayout, ...] | None:
        # Both paths index the cache through its strides: every layout works, none is preferred.
        return None

    @classmethod
    def supports_attn_type(cls, attn_type: str) -> bool:
        # Causal self-attention over the paged cache only: no encoder or cross-attention.
        return attn_type == AttentionType.DECODER

    @classmethod
    def supports_sliding_window(cls) -> bool:
        return SUPPORTS_SLIDING_WINDOW


@dataclass
class MyAttnMetadata:
    """One batch as the kernels see it. Tensors live on the model's device."""

    num_actual_tokens: int  # tokens of real requests; rows past it are padding
    max_query_len: int
    max_seq_len: int
    num_decodes: int  # requests with exactly one query token
    decode_splits: int  # programs sharing one decode's context (split-K), a power of two
    query_start_loc: torch.Tensor  # [num_reqs + 1], int32
    seq_lens: torch.Tensor  # [num_reqs], int32: cached + new tokens of each request
    block_table: torch.Tensor  # [num_reqs, max_blocks], int32
    slot_mapping: torch.Tensor  # [num_tokens], int64, -1 for padding


class MyAttnMetadataBuilder(AttentionMetadataBuilder[MyAttnMetadata]):
    """Turns vLLM's per-batch CommonAttentionMetadata into MyAttnMetadata, once per step."""

    # CUDA graphs replay kernel launches recorded with the host values of one batch.
    # - NEVER: always correct; vLLM runs attention eagerly.
    # - UNIFORM_SINGLE_TOKEN_DECODE: safe here because the decode launch reads every length on the device
    #   and its grid depends only on the (padded) request count and decode_splits, which build() then derives
    #   from max_model_len instead of this batch's max_seq_len.
    # - UNIFORM_BATCH (spec-decode verification, 1 + k tokens per request): safe for the same reason; the
    #   prefill launch's grid depends on max_query_len, which is the same for every uniform batch of a size.
    # - ALWAYS (mixed prefill + decode batches) is NOT safe: the prefill grid and the decode/prefill split
    #   come from host values of the captured batch. Raising it needs grids sized from upper bounds.
    _cudagraph_support: ClassVar[AttentionCGSupport] = AttentionCGSupport.NEVER
    # Split-K decode: aim for this many programs per decode launch (None: twice the SM count on CUDA,
    # no split elsewhere), never fewer than min_tokens_per_split keys per program.
    split_target_programs: ClassVar[int | None] = None
    min_tokens_per_split: ClassVar[int] = 256

    def __init__(
        self,
        kv_cache_spec: AttentionSpec,
        layer_names: list[str],
        vllm_config: VllmConfig,
        device: torch.device,
    ) -> None:
        super().__init__(kv_cache_spec, layer_names, vllm_config, device)
        self.num_kv_heads = kv_cache_spec.num_kv_heads
        self.max_model_len = vllm_config.model_config.max_model_len
        self.graph_safe = self._cudagraph_support != AttentionCGSupport.NEVER
        target = self.split_target_programs
        if target is None:
            on_cuda = device.type == "cuda"
            target = 2 * torch.cuda.get_device_properties(device).multi_processor_count if on_cuda else 0
        self.target_programs = target

    def build(
        self,
        common_prefix_len: int,
        common_attn_metadata: CommonAttentionMetadata,
        fast_build: bool = False,
    ) -> MyAttnMetadata:
        CALLS["build"] += 1
        meta = common_attn_metadata
        starts = meta.query_start_loc_cpu
        num_decodes = int(((starts[1:] - starts[:-1]) == 1).sum())
        splits = 1
        if num_decodes:
            longest = self.max_model_len if self.graph_safe else meta.max_seq_len
            splits = kernels.decode_splits(
                longest, meta.num_reqs, self.num_kv_heads, self.target_programs, self.min_tokens_per_split
            )
            CALLS["split_decode"] += splits > 1
        return MyAttnMetadata(
            num_actual_tokens=meta.num_actual_tokens,
            max_query_len=meta.max_query_len,
            max_seq_len=meta.max_seq_len,
            num_decodes=num_decodes,
            decode_splits=splits,
            query_start_loc=meta.query_start_loc,
            seq_lens=meta.seq_lens,
            block_table=meta.block_table_tensor,
            slot_mapping=meta.slot_mapping,
        )


class MyAttnImpl(AttentionImpl[MyAttnMetadata]):
    """One per attention layer: writes the layer's keys and values, then attends over its paged cache."""

    def __init__(
        self,
        num_heads: int,
        head_size: int,
        scale: float,
        num_kv_heads: int | None = None,
        alibi_slopes: list[float] | None = None,
        sliding_window: int | None = None,
        kv_cache_dtype: str = "auto",
        logits_soft_cap: float | None = None,
        attn_type: str = AttentionType.DECODER,
        kv_sharing_target_layer_name: str | None = None,
    ) -> None:
        cache_dtypes = MyAttnBackend.supported_kv_cache_dtypes
        unsupported = {
            "ALiBi slopes": alibi_slopes is not None,
            f"attention type {attn_type}": attn_type != AttentionType.DECODER,
            "a sliding window": bool(sliding_window) and not SUPPORTS_SLIDING_WINDOW,
            "a logits soft cap": bool(logits_soft_cap) and not SUPPORTS_LOGITS_SOFT_CAP,
            f"kv_cache_dtype={kv_cache_dtype}": kv_cache_dtype not in cache_dtypes,
        }
        missing = [feature for feature, needed in unsupported.items() if needed]
        if missing:
            raise ValueError(
                "the CUSTOM attention backend "
                f"does not support {', '.join(missing)}: "
                "select another attention backend for this model"
            )
        self.num_heads = num_heads
        self.head_size = head_size
        self.scale = float(scale)
        self.num_kv_heads = num_kv_heads or num_heads
        self.sliding_window = sliding_window or None
        self.logits_soft_cap = logits_soft_cap or None
        self.kv_cache_dtype = kv_cache_dtype
        self.attn_type = attn_type
        self.kv_sharing_target_layer_name = kv_sharing_target_layer_name
        self.kernels = os.environ.get(KERNELS_ENV) or None
        if self.kernels not in (None, *KERNEL_PATHS):
            choices = ", ".join(KERNEL_PATHS)
            raise ValueError(f"{KERNELS_ENV}={self.kernels!r}: use one of {choices}, or unset it")

    def _path(self, tensor: torch.Tensor) -> str:
        return self.kernels or ("triton" if tensor.is_cuda else "torch")

    def do_kv_cache_update(
        self,
        layer: torch.nn.Module,
        key: torch.Tensor,
        value: torch.Tensor,
        kv_cache: torch.Tensor,
        slot_mapping: torch.Tensor,
    ) -> None:
        """Writes this step's keys and values into the paged cache (slots of -1 are padding)."""
        CALLS["kv_update"] += 1
        module = kernels if self._path(key) == "triton" else reference
        module.write_kv_cache(key, value, kv_cache, slot_mapping)

    def forward(
        self,
        layer: AttentionLayer,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        kv_cache: torch.Tensor,
        attn_metadata: MyAttnMetadata | None,
        output: torch.Tensor,
        output_scale: torch.Tensor | None = None,
        output_block_scale: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """query [num_tokens, num_heads, head_size] -> output of the same shape (written in place)."""
        if attn_metadata is None:
            # Warm-up and memory-profiling runs pass no metadata: there is no batch to attend over.
            return output.fill_(0)
        num_tokens = attn_metadata.num_actual_tokens
        path = self._path(query)
        CALLS[path] += 1
        args = (
            query[:num_tokens],
            kv_cache,
            output[:num_tokens],
            attn_metadata.query_start_loc,
            attn_metadata.seq_lens,
            attn_metadata.block_table,
            self.scale,
        )
        if path == "triton":
            kernels.paged_attention(
                *args,
                max_query_len=attn_metadata.max_query_len,
                num_decodes=attn_metadata.num_decodes,
                num_splits=attn_metadata.decode_splits,
                sliding_window=self.sliding_window,
                logits_soft_cap=self.logits_soft_cap,
            )
        else:
            reference.paged_attention(
                *args, sliding_window=self.sliding_window, logits_soft_cap=self.logits_soft_cap
            )
        return output
