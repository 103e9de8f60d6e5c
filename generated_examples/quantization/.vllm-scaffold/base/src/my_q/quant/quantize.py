"""Writes a `my_q` checkpoint from a float one: `python -m my_q.quant.quantize SRC DST`.

Runs offline, in its own process, never inside vLLM; it imports torch, safetensors and this component's kernel
module only. Every 2-D `<module>.weight` of a linear layer becomes int8 with a float32 `<module>.weight_scale`
(one per output row); embeddings, norms and the layers in `--ignore` stay as they are. config.json gets the
quantization_config vLLM reads to pick this method, so `LLM(model=DST)` needs no `quantization=` argument.

`--dequantized` writes a float checkpoint whose weights are exactly the int8 values times their scales
instead: run vLLM on it without quantization to get the reference the quantized model must match.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from my_q.quant.format import DEFAULT_IGNORE, SCALE_SUFFIX, matches, quantization_config
from my_q.quant.kernel import dequantize, quantize_per_channel

# Matrices that are not linear layers in vLLM: a module whose last name part contains one of these stays.
NOT_LINEAR: tuple[str, ...] = ("embed", "wte", "wpe", "norm")
INDEX_FILE = "model.safetensors.index.json"


def is_quantized(name: str, tensor: torch.Tensor, ignore: tuple[str, ...]) -> bool:
    """Whether checkpoint tensor `name` is the weight of a linear layer this method quantizes."""
    if not name.endswith(".weight") or tensor.dim() != 2 or not tensor.is_floating_point():
        return False
    module = name.removesuffix(".weight")
    if any(part in module.rsplit(".", 1)[-1] for part in NOT_LINEAR):
        return False
    return not matches(module, ignore)


def convert(
    tensors: dict[str, torch.Tensor], ignore: tuple[str, ...], dequantized: bool
) -> dict[str, torch.Tensor]:
    converted: dict[str, torch.Tensor] = {}
    for name, tensor in tensors.items():
        if not is_quantized(name, tensor, ignore):
            converted[name] = tensor
            continue
        weight_q, scale = quantize_per_channel(tensor)
        if dequantized:
            converted[name] = dequantize(weight_q, scale, tensor.dtype)
        else:
            converted[name] = weight_q
            converted[name.removesuffix(".weight") + SCALE_SUFFIX] = scale
    return converted


def quantize_checkpoint(
    src: Path, dst: Path, ignore: tuple[str, ...] = DEFAULT_IGNORE, dequantized: bool = False
) -> list[str]:
    """Writes the checkpoint into new directory `dst`; returns the names of the quantized weights."""
    shards = sorted(src.glob("*.safetensors"))
    if not shards:
        raise FileNotFoundError(f"{src} holds no *.safetensors file: save the model with safetensors first")
    dst.mkdir(parents=True)
    for path in src.iterdir():
        if path.is_file() and path.suffix != ".safetensors" and path.name not in ("config.json", INDEX_FILE):
            shutil.copy2(path, dst / path.name)
    quantized: list[str] = []
    weight_map: dict[str, str] = {}
    for shard in shards:
        tensors = load_file(shard)
        converted = convert(tensors, ignore, dequantized)
        quantized += [name for name in tensors if is_quantized(name, tensors[name], ignore)]
        weight_map.update(dict.fromkeys(converted, shard.name))
        save_file(converted, dst / shard.name, metadata={"format": "pt"})
    if (src / INDEX_FILE).is_file():
        index = json.loads((src / INDEX_FILE).read_text(encoding="utf-8"))
        index["weight_map"] = weight_map
        (dst / INDEX_FILE).write_text(json.dumps(index, indent=2) + "\n", encoding="utf-8")
    config = json.loads((src / "config.json").read_text(encoding="utf-8"))
    if not dequantized:
        config["quantization_config"] = quantization_config(ignore)
    (dst / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    return quantized


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m my_q.quant.quantize", description=__doc__)
    parser.add_argument("src", type=Path, help="float checkpoint directory (safetensors + config.json)")
    parser.add_argument("dst", type=Path, help="directory to create")
    parser.add_argument(
        "--ignore",
        default=",".join(DEFAULT_IGNORE),
        help="comma-separated modules left unquantized (default: %(default)s)",
    )
    parser.add_argument("--dequantized", action="store_true", help="write the float reference instead")
    args = parser.parse_args(argv)
    if args.dst.exists():
        parser.error(f"{args.dst} already exists: choose a new directory")
    ignore = tuple(item.strip() for item in args.ignore.split(",") if item.strip())
    quantized = quantize_checkpoint(args.src, args.dst, ignore, args.dequantized)
    kind = "dequantized float" if args.dequantized else "int8"
    skipped = ", ".join(ignore) or "none"
    print(f"wrote {args.dst}: {len(quantized)} linear weights as {kind}, unquantized: {skipped}")


if __name__ == "__main__":
    main()
