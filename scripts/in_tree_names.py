"""The names vLLM registers itself, written into the templates' validator data.

A plugin that registers one of these names either silently replaces vLLM's own implementation (model
architectures, quantization methods), raises in every process (KV connectors), or is refused outright
(attention backends other than the CUSTOM slot), so the templates' questions refuse them. A generated plugin
runs on every release it declares, so a name is refused when any of those releases registers it. The lists
come from the shipped release indexes (`vllm_scaffold.vllm_facts`) into
`templates/_shared/in_tree_names.jinja`, so the CLI never reads vLLM. A maintainer script, not part of the
tool: regenerate the file after adding a release with `python scripts/in_tree_names.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from pathlib import Path

from vllm_scaffold import vllm_facts
from vllm_scaffold.generate.rendering import templates_root
from vllm_scaffold.vllm_facts import ReleaseIndex

DATA_FILE = "in_tree_names.jinja"

# Jinja variable -> the index registry it lists.
REGISTRIES: dict[str, str] = {
    "IN_TREE_ARCHITECTURES": "architectures",
    "IN_TREE_QUANTIZATION_METHODS": "quantization_methods",
    "IN_TREE_KV_CONNECTORS": "kv_connectors",
    "IN_TREE_OFFLOADING_SPECS": "offloading_specs",
    "IN_TREE_ATTENTION_BACKENDS": "attention_backends",
}

# Jinja variable -> the parser names an index lists (vllm_facts.parsers reads them from the release's tables).
PARSERS: dict[str, Callable[[ReleaseIndex], frozenset[str] | None]] = {
    "IN_TREE_TOOL_PARSERS": attrgetter("tool_parsers"),
    "IN_TREE_REASONING_PARSERS": attrgetter("reasoning_parsers"),
}


def names(versions: list[str]) -> dict[str, list[str]]:
    """Jinja variable -> every name any of `versions` registers, sorted."""
    found = {
        variable: sorted({name for v in versions for name in vllm_facts.shipped(v).registry(registry)})
        for variable, registry in REGISTRIES.items()
    }
    for variable, listed in PARSERS.items():
        found[variable] = sorted({name for v in versions for name in listed(vllm_facts.shipped(v)) or ()})
    return found


def render_data(versions: list[str]) -> str:
    header = f"Names vLLM {', '.join(versions)} register themselves; written by python scripts/in_tree_names.py"
    lines = [f"{{# {header} #}}"]
    for variable, found in names(versions).items():
        lines += [f"{{% set {variable} = [", *(f'    "{name}",' for name in found), "] %}"]
    return "\n".join(lines) + "\n"


def shipped_data() -> str:
    return render_data(vllm_facts.checked_versions())


def main() -> Path:
    target = templates_root() / "_shared" / DATA_FILE
    target.write_text(shipped_data(), encoding="utf-8")
    return target


if __name__ == "__main__":
    print(f"wrote {main()}")
