"""Writes MyDecoderForCausalLM checkpoints offline: random weights, and the same weights in Llama's layout.

No vLLM process imports this module: tests and users call it to make a checkpoint directory vLLM can
load. It needs torch, safetensors and transformers (for the tokenizer). The config.json uses transformers'
`llama` config schema (`"model_type": "llama"`), so vLLM parses its sizes without trust_remote_code, and
lists "MyDecoderForCausalLM" in `architectures`, which is what makes vLLM pick this package's model class.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

ARCHITECTURE = "MyDecoderForCausalLM"
WEIGHTS_FILE = "model.safetensors"

# The smallest shapes the CPU attention backend accepts (head size 32).
TINY_SIZES: dict[str, int | float] = {
    "hidden_size": 128,
    "intermediate_size": 256,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "num_hidden_layers": 2,
    "max_position_embeddings": 512,
    "rms_norm_eps": 1e-5,
}

# This architecture's tensor names -> transformers' Llama names ({i}: the layer index).
LLAMA_NAMES: dict[str, str] = {
    "tok_embeddings.weight": "model.embed_tokens.weight",
    "layers.{i}.attention_norm.weight": "model.layers.{i}.input_layernorm.weight",
    "layers.{i}.attention.wq.weight": "model.layers.{i}.self_attn.q_proj.weight",
    "layers.{i}.attention.wk.weight": "model.layers.{i}.self_attn.k_proj.weight",
    "layers.{i}.attention.wv.weight": "model.layers.{i}.self_attn.v_proj.weight",
    "layers.{i}.attention.wo.weight": "model.layers.{i}.self_attn.o_proj.weight",
    "layers.{i}.ffn_norm.weight": "model.layers.{i}.post_attention_layernorm.weight",
    "layers.{i}.feed_forward.w1.weight": "model.layers.{i}.mlp.gate_proj.weight",
    "layers.{i}.feed_forward.w3.weight": "model.layers.{i}.mlp.up_proj.weight",
    "layers.{i}.feed_forward.w2.weight": "model.layers.{i}.mlp.down_proj.weight",
    "norm.weight": "model.norm.weight",
    "output.weight": "lm_head.weight",
}


def random_weights(config: dict, seed: int) -> dict[str, torch.Tensor]:
    """float32 weights with this architecture's names; norms near 1, matrices scaled by 1/sqrt(fan_in)."""
    generator = torch.Generator().manual_seed(seed)
    hidden, inner, vocab = config["hidden_size"], config["intermediate_size"], config["vocab_size"]
    head_dim = hidden // config["num_attention_heads"]
    kv_width = config["num_key_value_heads"] * head_dim

    def matrix(rows: int, columns: int) -> torch.Tensor:
        return torch.randn(rows, columns, generator=generator) / columns**0.5

    def norm() -> torch.Tensor:
        return 1.0 + 0.1 * torch.randn(hidden, generator=generator)

    weights = {"tok_embeddings.weight": torch.randn(vocab, hidden, generator=generator)}
    for i in range(config["num_hidden_layers"]):
        weights |= {
            f"layers.{i}.attention_norm.weight": norm(),
            f"layers.{i}.attention.wq.weight": matrix(hidden, hidden),
            f"layers.{i}.attention.wk.weight": matrix(kv_width, hidden),
            f"layers.{i}.attention.wv.weight": matrix(kv_width, hidden),
            f"layers.{i}.attention.wo.weight": matrix(hidden, hidden),
            f"layers.{i}.ffn_norm.weight": norm(),
            f"layers.{i}.feed_forward.w1.weight": matrix(inner, hidden),
            f"layers.{i}.feed_forward.w3.weight": matrix(inner, hidden),
            f"layers.{i}.feed_forward.w2.weight": matrix(hidden, inner),
        }
    return weights | {"norm.weight": norm(), "output.weight": matrix(vocab, hidden)}


def write_checkpoint(directory: Path, tokenizer_dir: Path, *, seed: int = 0, **sizes: int | float) -> Path:
    """A random-weight checkpoint in `directory`, with the tokenizer of `tokenizer_dir`.

    The vocabulary is the tokenizer's length, so the model never emits an id the tokenizer lacks.
    """
    from transformers import AutoTokenizer

    directory.mkdir(parents=True, exist_ok=True)
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    tokenizer.save_pretrained(directory)
    config = {
        "architectures": [ARCHITECTURE],
        "model_type": "llama",
        "torch_dtype": "float32",
        "vocab_size": len(tokenizer),
        "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": tokenizer.eos_token_id,
        "tie_word_embeddings": False,
        "hidden_act": "silu",
        "rope_theta": 10000.0,
        **TINY_SIZES,
        **sizes,
    }
    save_file(random_weights(config, seed), str(directory / WEIGHTS_FILE))
    (directory / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    return directory


def as_llama_checkpoint(source: Path, directory: Path) -> Path:
    """The same weights, renamed to transformers' Llama layout and labelled LlamaForCausalLM."""
    directory.mkdir(parents=True, exist_ok=True)
    config = json.loads((source / "config.json").read_text(encoding="utf-8"))
    weights = load_file(str(source / WEIGHTS_FILE))
    renamed = {llama_name(name): tensor for name, tensor in weights.items()}
    save_file(renamed, str(directory / WEIGHTS_FILE))
    for path in source.iterdir():
        if path.name.startswith("tokenizer") or path.name == "special_tokens_map.json":
            shutil.copy2(path, directory / path.name)
    config["architectures"] = ["LlamaForCausalLM"]
    (directory / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    return directory


def llama_name(name: str) -> str:
    """The transformers Llama name of one of this architecture's tensors."""
    parts = name.split(".")
    if parts[0] == "layers":
        return LLAMA_NAMES["layers.{i}." + ".".join(parts[2:])].format(i=parts[1])
    return LLAMA_NAMES[name]
