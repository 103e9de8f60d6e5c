"""The architecture names vLLM registers itself, written into the model template's validator data.

A plugin that registers one of these names silently replaces vLLM's own model (ModelRegistry only logs at
DEBUG), so the `model` template refuses them. The list is data, precomputed from the installed vLLM, so the
CLI never imports vLLM. Regenerate it after moving to a new vLLM with `python -m vllm_scaffold.architectures`.
"""

from __future__ import annotations

from pathlib import Path

from vllm_scaffold.rendering import templates_root

DATA_FILE = "in_tree_architectures.jinja"


def in_tree_architectures() -> list[str]:
    """Every architecture name the installed vLLM registers before any plugin runs."""
    from vllm.model_executor.models.registry import _VLLM_MODELS

    return sorted(_VLLM_MODELS)


def render_data(version: str, names: list[str]) -> str:
    lines = [
        f"{{# Architectures vLLM {version} registers itself; written by python -m vllm_scaffold.architectures #}}",
        "{% set IN_TREE_ARCHITECTURES = [",
        *(f'    "{name}",' for name in names),
        "] %}",
    ]
    return "\n".join(lines) + "\n"


def main() -> Path:
    import vllm

    target = templates_root() / "_shared" / DATA_FILE
    target.write_text(render_data(vllm.__version__, in_tree_architectures()), encoding="utf-8")
    return target


if __name__ == "__main__":
    print(f"wrote {main()}")
