"""The `my_q` checkpoint format, shared by the vLLM side (config.py) and the offline quantize helper.

Imported in every vLLM process that builds MyQConfig (front end and workers) and by
`python -m my_q.quant.quantize`; it imports nothing, so both stay in step without either
depending on the other.
"""

from __future__ import annotations

from typing import Any

METHOD_NAME = "my_q"
# Layers left in their checkpoint dtype: a module name or dotted suffix, matched at a "." boundary.
DEFAULT_IGNORE: tuple[str, ...] = ("lm_head",)
# What config.json's quantization_config holds besides quant_method and ignore.
CHECKPOINT_FORMAT: dict[str, Any] = {"bits": 8, "symmetric": True, "granularity": "channel"}
# Per linear layer `<module>`: `<module>.weight` int8 [N, K] and `<module>.weight_scale` float32 [N].
SCALE_SUFFIX = ".weight_scale"


def quantization_config(ignore: tuple[str, ...] | list[str]) -> dict[str, Any]:
    """The quantization_config entry of config.json that makes vLLM pick this method."""
    return {"quant_method": METHOD_NAME, **CHECKPOINT_FORMAT, "ignore": list(ignore)}


def matches(module: str, layers: tuple[str, ...] | list[str]) -> bool:
    """Whether `module` is one of `layers` or ends with ".<layer>" (vLLM's "suffix" match)."""
    return any(module == layer or module.endswith(f".{layer}") for layer in layers)
