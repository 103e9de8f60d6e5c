"""A tiny LoRA adapter for the tiny Llama, written offline without peft.

An adapter directory is what vLLM's LoRA loader reads: `adapter_config.json` (peft's format) and
`adapter_model.safetensors` with `lora_A` / `lora_B` matrices named after the base model's modules. The
matrices come from a fixed seed and are large enough that the adapter visibly changes greedy tokens, so a
test can tell an applied adapter from a silently ignored one.
"""

from __future__ import annotations

import json
from pathlib import Path

LORA_RANK = 8
LORA_TARGETS = ("q_proj", "v_proj", "down_proj")
LORA_SEED = 4321


def write_tiny_lora(base_model: Path, directory: Path, *, rank: int = LORA_RANK, seed: int = LORA_SEED) -> Path:
    """Writes a rank-`rank` LoRA adapter for the model at `base_model` (a Llama layout) into `directory`."""
    import torch
    from safetensors.torch import save_file

    config = json.loads((base_model / "config.json").read_text(encoding="utf-8"))
    hidden, inner = config["hidden_size"], config["intermediate_size"]
    head_dim = config.get("head_dim") or hidden // config["num_attention_heads"]
    kv_width = config["num_key_value_heads"] * head_dim
    shapes = {  # module -> (in_features, out_features)
        "self_attn.q_proj": (hidden, hidden),
        "self_attn.v_proj": (hidden, kv_width),
        "mlp.down_proj": (inner, hidden),
    }
    generator = torch.Generator().manual_seed(seed)
    tensors: dict[str, torch.Tensor] = {}
    for layer in range(config["num_hidden_layers"]):
        for module, (fan_in, fan_out) in shapes.items():
            prefix = f"base_model.model.model.layers.{layer}.{module}"
            tensors[f"{prefix}.lora_A.weight"] = torch.randn(rank, fan_in, generator=generator) / fan_in**0.5
            tensors[f"{prefix}.lora_B.weight"] = torch.randn(fan_out, rank, generator=generator)
    directory.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(directory / "adapter_model.safetensors"))
    adapter_config = {
        "peft_type": "LORA",
        "task_type": "CAUSAL_LM",
        "base_model_name_or_path": str(base_model),
        "r": rank,
        "lora_alpha": 2 * rank,
        "lora_dropout": 0.0,
        "bias": "none",
        "target_modules": list(LORA_TARGETS),
        "fan_in_fan_out": False,
        "modules_to_save": None,
        "use_rslora": False,
        "use_dora": False,
    }
    (directory / "adapter_config.json").write_text(json.dumps(adapter_config, indent=2), encoding="utf-8")
    return directory
