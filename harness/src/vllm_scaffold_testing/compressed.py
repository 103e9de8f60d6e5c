"""compressed-tensors checkpoints of a float model, written offline for linear-kernel tests.

vLLM serves them through its compressed-tensors method, whose schemes ask the linear-kernel selector for a
kernel: the way to drive an out-of-tree kernel inside the engine without a calibration tool.
- `write_w8a8_checkpoint`: int8 weights (one float32 scale per output channel) and dynamic symmetric int8
  activations per token (format `int-quantized`): the int8 W8A8 scheme asks for an `int8` ScaledMM kernel.
- `write_w8a16_checkpoint`: the same int8 weights stored offset by 128 and packed four to an int32 along
  the input dimension, float activations (format `pack-quantized`): the WNA16 scheme asks for an `mp` kernel
  with weight type uint8b128.
Configs are built with the `compressed-tensors` package's own models and packer, so they are the format vLLM
parses.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path

INT8_MAX = 127
# The linear layers of a Llama checkpoint (unfused names).
LLAMA_LINEAR: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def quantization_config(activations: bool, ignore: Sequence[str] = ("lm_head",)) -> dict:
    """config.json's quantization_config: int8 weights per channel, plus int8 activations per token if asked."""
    from compressed_tensors.quantization import QuantizationArgs, QuantizationConfig, QuantizationScheme

    weights = QuantizationArgs(num_bits=8, type="int", symmetric=True, strategy="channel", dynamic=False)
    inputs = QuantizationArgs(num_bits=8, type="int", symmetric=True, strategy="token", dynamic=True)
    scheme = QuantizationScheme(targets=["Linear"], weights=weights, input_activations=inputs if activations else None)
    config = QuantizationConfig(
        config_groups={"group_0": scheme},
        format="int-quantized" if activations else "pack-quantized",
        quantization_status="compressed",
        ignore=list(ignore),
    )
    return {**config.model_dump(exclude_none=True), "quant_method": "compressed-tensors"}


def write_w8a8_checkpoint(src: Path, dst: Path, *, dequantized: bool = False) -> Path:
    """Writes the W8A8 checkpoint of the float checkpoint `src` into the new directory `dst`.

    With `dequantized`, writes a float checkpoint instead whose linear weights are exactly the int8 values
    times their scales (no quantization_config): what vLLM without quantization runs as the reference.
    """
    return _write(src, dst, packed=False, dequantized=dequantized)


def write_w8a16_checkpoint(src: Path, dst: Path) -> Path:
    """Writes the packed 8-bit weight-only checkpoint of `src` into the new directory `dst` (same int8 values
    and scales as `write_w8a8_checkpoint`, so its `dequantized` reference serves both)."""
    return _write(src, dst, packed=True, dequantized=False)


def _write(src: Path, dst: Path, *, packed: bool, dequantized: bool) -> Path:
    import torch
    from compressed_tensors.compressors.pack_quantized.helpers import pack_to_int32
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
            elif packed:
                tensors[f"{module}.weight_packed"] = pack_to_int32(weight_q, num_bits=8)
                tensors[f"{module}.weight_scale"] = scale.to(tensor.dtype)  # the model dtype, [N, 1]
                tensors[f"{module}.weight_shape"] = torch.tensor(weight_q.shape, dtype=torch.int64)
            else:
                tensors[name] = weight_q
                tensors[f"{module}.weight_scale"] = scale  # [N, 1], as compressed-tensors stores it
        save_file(tensors, dst / shard.name, metadata={"format": "pt"})
    config = json.loads((src / "config.json").read_text(encoding="utf-8"))
    if not dequantized:
        config["quantization_config"] = quantization_config(activations=not packed)
    (dst / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    return dst
