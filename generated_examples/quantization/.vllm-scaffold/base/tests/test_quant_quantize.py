"""`python -m my_q.quant.quantize` writes the checkpoint format vLLM's side of the method loads.

Runs on the tiny random Llama, offline, without vLLM: what the engine tests then load is checked here
tensor by tensor.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from my_q.quant.format import CHECKPOINT_FORMAT, DEFAULT_IGNORE, METHOD_NAME
from my_q.quant.kernel import dequantize
from my_q.quant.quantize import quantize_checkpoint

LINEAR = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def load_all(directory: Path) -> dict[str, torch.Tensor]:
    tensors: dict[str, torch.Tensor] = {}
    for shard in sorted(directory.glob("*.safetensors")):
        tensors.update(load_file(shard))
    return tensors


def test_command_line_writes_int8_weights_scales_and_config(tiny_llama: Path, tmp_path: Path) -> None:
    dst = tmp_path / "int8"
    command = [sys.executable, "-m", "my_q.quant.quantize", str(tiny_llama), str(dst)]
    completed = subprocess.run(command, capture_output=True, text=True, check=False)
    assert completed.returncode == 0, completed.stderr
    original, written = load_all(tiny_llama), load_all(dst)
    quantized = [name for name in original if name.removesuffix(".weight").endswith(LINEAR)]
    assert quantized and f"{len(quantized)} linear weights" in completed.stdout
    for name in quantized:
        scale = written[name.removesuffix(".weight") + ".weight_scale"]
        assert written[name].dtype == torch.int8 and scale.shape == (original[name].shape[0],)
        error = (dequantize(written[name], scale) - original[name]).abs()
        assert torch.all(error <= scale[:, None] / 2 + 1e-6), name
    for name in set(original) - set(quantized):  # embeddings, norms, the ignored lm_head
        assert torch.equal(written[name], original[name]), name
    config = json.loads((dst / "config.json").read_text())
    assert config["quantization_config"] == {
        "quant_method": METHOD_NAME,
        **CHECKPOINT_FORMAT,
        "ignore": list(DEFAULT_IGNORE),
    }
    assert (dst / "tokenizer.json").is_file()


def test_ignore_keeps_layers_float_and_refuses_existing_destination(tiny_llama: Path, tmp_path: Path) -> None:
    quantize_checkpoint(tiny_llama, tmp_path / "partial", ignore=("lm_head", "down_proj"))
    written = load_all(tmp_path / "partial")
    assert written["model.layers.0.mlp.down_proj.weight"].is_floating_point()
    assert "model.layers.0.mlp.down_proj.weight_scale" not in written
    assert written["model.layers.0.mlp.up_proj.weight"].dtype == torch.int8
    with pytest.raises(FileExistsError):
        quantize_checkpoint(tiny_llama, tmp_path / "partial")


def test_dequantized_reference_is_float_and_unmarked(tiny_llama: Path, tmp_path: Path) -> None:
    quantize_checkpoint(tiny_llama, tmp_path / "int8")
    quantize_checkpoint(tiny_llama, tmp_path / "ref", dequantized=True)
    int8, ref = load_all(tmp_path / "int8"), load_all(tmp_path / "ref")
    name = "model.layers.1.self_attn.q_proj"
    expected = dequantize(int8[f"{name}.weight"], int8[f"{name}.weight_scale"])
    assert torch.equal(ref[f"{name}.weight"], expected)
    assert "quantization_config" not in json.loads((tmp_path / "ref" / "config.json").read_text())
