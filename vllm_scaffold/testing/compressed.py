"""A compressed-tensors int8 W8A8 checkpoint of a float model, written offline for linear-kernel tests.

vLLM serves such a checkpoint through its compressed-tensors method, whose int8 scheme asks the linear-kernel
selector for an `int8` ScaledMM kernel: the way to drive an out-of-tree kernel of that kind inside the engine
without a calibration tool. Weights: symmetric int8 with one float32 scale per output channel. Activations:
dynamic, symmetric, one scale per token (computed by the kernel at run time, nothing stored). The config is
built with the `compressed-tensors` package's own models, so it is the format vLLM parses.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path

INT8_MAX = 127
# The linear layers of a Llama checkpoint (unfused names).
LLAMA_LINEAR: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def w8a8_quantization_config(ignore: Sequence[str] = ("lm_head",)) -> dict:
    """config.json's quantization_config for int8 weights per channel and int8 activations per token."""
    from compressed_tensors.quantization import QuantizationArgs, QuantizationConfig, QuantizationScheme

    weights = QuantizationArgs(num_bits=8, type="int", symmetric=True, strategy="channel", dynamic=False)
    activations = QuantizationArgs(num_bits=8, type="int", symmetric=True, strategy="token", dynamic=True)
    config = QuantizationConfig(
        config_groups={
            "group_0": QuantizationScheme(targets=["Linear"], weights=weights, input_activations=activations)
        },
        format="int-quantized",
        quantization_status="compressed",
        ignore=list(ignore),
    )
    return {**config.model_dump(exclude_none=True), "quant_method": "compressed-tensors"}


def write_w8a8_checkpoint(src: Path, dst: Path, *, dequantized: bool = False) -> Path:
    """Writes the W8A8 checkpoint of the float checkpoint `src` into the new directory `dst`.

    With `dequantized`, writes a float checkpoint instead whose linear weights are exactly the int8 values
    times their scales (no quantization_config): what vLLM without quantization runs as the reference.
    """
    import torch
    from safetensors.torch import load_file, save_file

    dst.mkdir(parents=True)
    for path in src.iterdir():
        if path.is_file() and path.suffix != ".safetensors" and path.name != "config.json":
            shutil.copy2(path, dst / path.name)
    for shard in sorted(src.glob("*.safetensors")):
        tensors: dict[str, torch.Tensor] = {}
        for name, tensor in load_file(shard).items():
            module = name.removesuffix(".weight")
            if not (name.endswith(".weight") and module.endswith(LLAMA_LINEAR)):
                tensors[name] = tensor
                continue
            weight = tensor.to(torch.float32)
            amax = weight.abs().amax(dim=1, keepdim=True)
            scale = torch.where(amax > 0, amax / INT8_MAX, torch.ones_like(amax))
            weight_q = torch.round(weight / scale).clamp(-INT8_MAX, INT8_MAX).to(torch.int8)
            if dequantized:
                tensors[name] = (weight_q.to(torch.float32) * scale).to(tensor.dtype)
            else:
                tensors[name] = weight_q
                tensors[f"{module}.weight_scale"] = scale  # [N, 1], as compressed-tensors stores it
        save_file(tensors, dst / shard.name, metadata={"format": "pt"})
    config = json.loads((src / "config.json").read_text(encoding="utf-8"))
    if not dequantized:
        config["quantization_config"] = w8a8_quantization_config()
    (dst / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    return dst
