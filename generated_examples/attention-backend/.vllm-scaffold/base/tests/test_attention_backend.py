"""MyAttnBackend outside the engine: declared capabilities, registration, builder and impl contracts.

Needs vLLM (skipped without it); starts no engine.
"""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest
import torch

pytest.importorskip("vllm")

from vllm.v1.attention.backend import AttentionType, CommonAttentionMetadata  # noqa: E402
from vllm.v1.attention.backends import registry  # noqa: E402
from vllm.v1.kv_cache_interface import FullAttentionSpec  # noqa: E402

from my_attn.attention import backend, registration  # noqa: E402
from my_attn.attention.backend import (  # noqa: E402
    MyAttnBackend,
    MyAttnImpl,
    MyAttnMetadata,
    MyAttnMetadataBuilder,
)


def problems(**overrides: object) -> list[str]:
    """What vLLM's platform check (validate_configuration) reports for one configuration."""
    config: dict[str, object] = dict(
        head_size=64, dtype=torch.bfloat16, kv_cache_dtype="auto", block_size=16, use_mla=False,
        has_sink=False, use_sparse=False, use_mm_prefix=False, use_per_head_quant_scales=False,
        device_capability=None, attn_type=AttentionType.DECODER,
    )  # fmt: skip
    config.update(overrides)
    return MyAttnBackend.validate_configuration(**config)


@pytest.mark.parametrize("head_size", [32, 64, 80, 128, 256])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize("block_size", [16, 32, 128])
def test_accepts_what_the_kernels_handle(head_size: int, dtype: torch.dtype, block_size: int) -> None:
    assert problems(head_size=head_size, dtype=dtype, block_size=block_size) == []


@pytest.mark.parametrize(
    ("overrides", "reason"),
    [
        ({"head_size": 8}, "head_size not supported"),
        ({"kv_cache_dtype": "fp8"}, "kv_cache_dtype not supported"),
        ({"use_mla": True}, "MLA not supported"),
        ({"has_sink": True}, "attention sinks not supported"),
        ({"attn_type": AttentionType.ENCODER_ONLY}, "attention type"),
        ({"use_non_causal": True}, "non-causal attention not supported"),
    ],
)
def test_rejects_what_the_kernels_do_not_handle(overrides: dict[str, object], reason: str) -> None:
    assert any(reason in problem for problem in problems(**overrides)), problems(**overrides)


def test_sliding_window_capability_matches_the_impl() -> None:
    declared = "sliding window not supported" not in problems(has_sliding_window=True)
    assert declared is backend.SUPPORTS_SLIDING_WINDOW
    if declared:
        assert MyAttnImpl(4, 64, 0.1, 2, sliding_window=128).sliding_window == 128
    else:
        with pytest.raises(ValueError, match="sliding window"):
            MyAttnImpl(4, 64, 0.1, 2, sliding_window=128)


def test_no_get_kv_cache_shape_at_this_vllm_version() -> None:
    # vLLM never calls it; a backend written for an older release would implement dead code.
    assert not hasattr(MyAttnBackend, "get_kv_cache_shape")
    assert MyAttnBackend.forward_includes_kv_cache_update is False
    assert callable(MyAttnImpl.do_kv_cache_update)


@pytest.fixture
def fresh_overrides(monkeypatch: pytest.MonkeyPatch) -> dict:
    """vLLM's backend override table, restored after the test."""
    table = dict(registry._ATTN_OVERRIDES)
    monkeypatch.setattr(registry, "_ATTN_OVERRIDES", table)
    return table


def test_register_makes_the_name_resolve_to_this_backend(fresh_overrides: dict) -> None:
    registration.register()
    registration.register()  # idempotent: every vLLM process may run it
    member = registry.AttentionBackendEnum[registration.BACKEND_NAME]
    assert member.get_class() is MyAttnBackend
    # The attention layer looks its backend up by get_name(): it must be that member's name.
    assert registry.AttentionBackendEnum[MyAttnBackend.get_name()] is member
    # Production code never overrides an in-tree member (CPU_ATTN is overridden by the tests only).
    assert registry.AttentionBackendEnum.CPU_ATTN not in fresh_overrides


def test_taking_over_the_custom_slot_is_logged(
    fresh_overrides: dict, caplog: pytest.LogCaptureFixture
) -> None:
    fresh_overrides[registry.AttentionBackendEnum.CUSTOM] = "another_plugin.attention.Backend"
    with caplog.at_level(logging.WARNING, logger=registration.__name__):
        registration.register()
    assert "another_plugin.attention.Backend" in caplog.text
    assert registry.AttentionBackendEnum.CUSTOM.get_path() == registration.BACKEND_PATH


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"alibi_slopes": [0.5] * 4}, "ALiBi"),
        ({"attn_type": AttentionType.ENCODER_ONLY}, "attention type"),
        ({"kv_cache_dtype": "fp8"}, "kv_cache_dtype=fp8"),
    ],
)
def test_impl_refuses_layers_it_cannot_serve(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        MyAttnImpl(4, 64, 0.1, 2, **kwargs)


def test_impl_checks_the_kernel_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(backend.KERNELS_ENV, "cuda")
    with pytest.raises(ValueError, match=backend.KERNELS_ENV):
        MyAttnImpl(4, 64, 0.1, 2)
    monkeypatch.setenv(backend.KERNELS_ENV, "torch")
    assert MyAttnImpl(4, 64, 0.1, 2)._path(torch.zeros(1)) == "torch"


def test_warm_up_call_without_metadata_writes_zeros() -> None:
    impl = MyAttnImpl(4, 32, 0.1, 2)
    query = torch.randn(3, 4, 32)
    output = torch.ones(3, 4, 32)
    key = value = torch.randn(3, 2, 32)
    assert impl.forward(None, query, key, value, torch.empty(0), None, output) is output
    assert torch.all(output == 0)


def make_builder(max_model_len: int = 256) -> MyAttnMetadataBuilder:
    spec = FullAttentionSpec(block_size=16, num_kv_heads=2, head_size=32, dtype=torch.float32)
    config = SimpleNamespace(model_config=SimpleNamespace(max_model_len=max_model_len))
    return MyAttnMetadataBuilder(spec, ["layers.0.attn"], config, torch.device("cpu"))


def common_metadata(query_lens: list[int], seq_lens: list[int]) -> CommonAttentionMetadata:
    starts = torch.tensor([0, *torch.tensor(query_lens).cumsum(0).tolist()], dtype=torch.int32)
    num_tokens = int(starts[-1])
    return CommonAttentionMetadata(
        query_start_loc=starts, query_start_loc_cpu=starts,
        seq_lens=torch.tensor(seq_lens, dtype=torch.int32), num_reqs=len(query_lens),
        num_actual_tokens=num_tokens, max_query_len=max(query_lens), max_seq_len=max(seq_lens),
        block_table_tensor=torch.zeros(len(query_lens), 8, dtype=torch.int32),
        slot_mapping=torch.arange(num_tokens, dtype=torch.int64),
    )  # fmt: skip


def test_builder_counts_decodes_and_sizes_the_split(monkeypatch: pytest.MonkeyPatch) -> None:
    builds = backend.CALLS["build"]
    metadata = make_builder().build(0, common_metadata([1, 7, 1, 30], [90, 7, 12, 60]))
    assert isinstance(metadata, MyAttnMetadata)
    assert (metadata.num_decodes, metadata.max_query_len, metadata.num_actual_tokens) == (2, 30, 39)
    assert metadata.decode_splits == 1  # no CUDA device: nothing to gain from splitting
    assert backend.CALLS["build"] == builds + 1
    monkeypatch.setattr(MyAttnMetadataBuilder, "split_target_programs", 64)
    monkeypatch.setattr(MyAttnMetadataBuilder, "min_tokens_per_split", 16)
    builder = make_builder(max_model_len=256)
    # With CUDA graphs allowed the split follows max_model_len, so a captured launch fits later contexts.
    expected = 16 if builder.graph_safe else 4
    assert builder.build(0, common_metadata([1, 1], [90, 12])).decode_splits == expected
    assert make_builder().build(0, common_metadata([7], [7])).decode_splits == 1  # no decodes
