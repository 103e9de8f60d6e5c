"""The names vLLM registers itself, written into the templates' validator data.

A plugin that registers one of these names either silently replaces vLLM's own implementation (model
architectures, quantization methods), raises in every process (KV connectors), or is refused outright
(attention backends other than the CUSTOM slot), so the templates' questions refuse them. The lists are data,
precomputed from the installed vLLM into `templates/_shared/in_tree_names.jinja`, so the CLI never imports
vLLM. Regenerate them after moving to a new vLLM with `python -m vllm_scaffold.in_tree`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from vllm_scaffold.rendering import templates_root

DATA_FILE = "in_tree_names.jinja"


def _architectures() -> list[str]:
    from vllm.model_executor.models.registry import _VLLM_MODELS

    return sorted(_VLLM_MODELS)


def _quantization_methods() -> list[str]:
    from typing import get_args

    from vllm.model_executor.layers.quantization import QuantizationMethods

    return sorted(get_args(QuantizationMethods))


def _kv_connectors() -> list[str]:
    from vllm.distributed.kv_transfer.kv_connector.factory import KVConnectorFactory

    return sorted(KVConnectorFactory._registry)


def _attention_backends() -> list[str]:
    from vllm.v1.attention.backends.registry import AttentionBackendEnum

    return sorted(member.name for member in AttentionBackendEnum if member.name != "CUSTOM")


# Jinja variable -> the installed vLLM's list of names a plugin must not take.
SOURCES: dict[str, Callable[[], list[str]]] = {
    "IN_TREE_ARCHITECTURES": _architectures,
    "IN_TREE_QUANTIZATION_METHODS": _quantization_methods,
    "IN_TREE_KV_CONNECTORS": _kv_connectors,
    "IN_TREE_ATTENTION_BACKENDS": _attention_backends,
}


def render_data(version: str, lists: dict[str, list[str]]) -> str:
    lines = [f"{{# Names vLLM {version} registers itself; written by python -m vllm_scaffold.in_tree #}}"]
    for variable, names in lists.items():
        lines += [f"{{% set {variable} = [", *(f'    "{name}",' for name in names), "] %}"]
    return "\n".join(lines) + "\n"


def installed_data() -> str:
    import vllm

    return render_data(vllm.__version__, {variable: source() for variable, source in SOURCES.items()})


def main() -> Path:
    target = templates_root() / "_shared" / DATA_FILE
    target.write_text(installed_data(), encoding="utf-8")
    return target


if __name__ == "__main__":
    print(f"wrote {main()}")
