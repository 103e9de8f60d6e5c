"""How vLLM's front end and model builder see the `my_q` method, without starting an engine."""

from __future__ import annotations

import pytest

pytest.importorskip("vllm")

from vllm.model_executor.layers.linear import (  # noqa: E402
    MergedColumnParallelLinear,
    QKVParallelLinear,
    RowParallelLinear,
    UnquantizedLinearMethod,
)
from vllm.model_executor.layers.quantization import (  # noqa: E402
    QUANTIZATION_METHODS,
    get_quantization_config,
)
from vllm.model_executor.layers.vocab_parallel_embedding import (  # noqa: E402
    ParallelLMHead,
    UnquantizedEmbeddingMethod,
    VocabParallelEmbedding,
)

from my_q import vllm_plugin  # noqa: E402
from my_q.quant.config import MyQConfig, MyQLinearMethod  # noqa: E402
from my_q.quant.format import METHOD_NAME, quantization_config  # noqa: E402

LLAMA_PACKED = {"qkv_proj": ["q_proj", "k_proj", "v_proj"], "gate_up_proj": ["gate_proj", "up_proj"]}


def bare(layer_class: type) -> object:
    """An instance for isinstance checks only: get_quant_method looks at the type and the prefix."""
    return object.__new__(layer_class)


def test_general_plugin_registers_the_method() -> None:
    vllm_plugin.register()
    assert METHOD_NAME in QUANTIZATION_METHODS
    assert get_quantization_config(METHOD_NAME) is MyQConfig


def test_online_and_checkpoint_configs() -> None:
    online = MyQConfig()
    assert not online.checkpoint_quantized and online.get_name() == METHOD_NAME
    loaded = MyQConfig.from_config(quantization_config(["lm_head", "down_proj"]))
    assert loaded.checkpoint_quantized and loaded.ignore == ["lm_head", "down_proj"]


@pytest.mark.parametrize(
    "config",
    [
        {"quant_method": "fp8"},
        {**quantization_config(["lm_head"]), "bits": 4},
        {**quantization_config(["lm_head"]), "symmetric": False},
    ],
)
def test_from_config_names_the_mismatch(config: dict) -> None:
    with pytest.raises(ValueError, match="python -m my_q.quant.quantize"):
        MyQConfig.from_config(config)


@pytest.mark.parametrize(
    ("hf_quant_cfg", "user_quant", "expected"),
    [
        (quantization_config(["lm_head"]), None, METHOD_NAME),
        (quantization_config(["lm_head"]), METHOD_NAME, METHOD_NAME),
        (quantization_config(["lm_head"]), "fp8", None),
        ({"quant_method": "compressed-tensors"}, None, None),
        ({"quant_method": "gptq", "bits": 4}, "gptq", None),
    ],
)
def test_override_answers_only_for_its_own_checkpoints(hf_quant_cfg, user_quant, expected) -> None:
    assert MyQConfig.override_quantization_method(hf_quant_cfg, user_quant) == expected


def test_get_quant_method_per_layer() -> None:
    config = MyQConfig(ignore=["lm_head", "model.layers.1.self_attn.k_proj", "down_proj"])
    config.packed_modules_mapping = LLAMA_PACKED
    method = config.get_quant_method
    qkv = method(bare(QKVParallelLinear), "model.layers.0.self_attn.qkv_proj")
    gate_up = method(bare(MergedColumnParallelLinear), "model.layers.0.mlp.gate_up_proj")
    assert isinstance(qkv, MyQLinearMethod) and isinstance(gate_up, MyQLinearMethod)
    # Skipped linear layers get vLLM's unquantized method: None would make vLLM refuse to build them.
    assert type(method(bare(RowParallelLinear), "model.layers.0.mlp.down_proj")) is UnquantizedLinearMethod
    assert type(method(bare(ParallelLMHead), "lm_head")) is UnquantizedEmbeddingMethod
    assert method(bare(VocabParallelEmbedding), "model.embed_tokens") is None


def test_fused_layer_must_be_skipped_as_a_whole() -> None:
    config = MyQConfig(ignore=["model.layers.1.self_attn.k_proj"])
    config.packed_modules_mapping = LLAMA_PACKED
    with pytest.raises(ValueError, match="same precision"):
        config.get_quant_method(bare(QKVParallelLinear), "model.layers.1.self_attn.qkv_proj")


def test_backend_variable_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    from my_q.quant.config import BACKEND_ENV

    monkeypatch.setenv(BACKEND_ENV, "cuda")
    with pytest.raises(ValueError, match=BACKEND_ENV):
        MyQLinearMethod(MyQConfig())
