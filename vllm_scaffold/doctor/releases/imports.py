"""Imports of vLLM names, at any depth, that the release does not have (those under `if TYPE_CHECKING:` never
run; a guarded one is reported as guarded)."""

from __future__ import annotations

import ast

from vllm_scaffold.doctor.reading.package import Module
from vllm_scaffold.doctor.releases.classes import PluginClasses
from vllm_scaffold.doctor.releases.findings import Findings
from vllm_scaffold.doctor.releases.logits import V1_LOGITS_FIX, V1_LOGITS_MODULE
from vllm_scaffold.doctor.releases.places import walk


def check_imports(classes: PluginClasses, out: Findings, module: Module) -> None:
    release = classes.release
    for place in walk(module, ast.Import, ast.ImportFrom):
        node = place.node
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            targets = [f"{node.module}.{alias.name}" if alias.name != "*" else node.module for alias in node.names]
        else:
            continue
        if place.type_checking:
            continue
        for target in targets:
            if target.split(".")[0] != "vllm":
                continue
            missing = release.first_missing(target)
            if missing:
                out.report(
                    "vllm-import-missing",
                    place,
                    f"{missing} does not exist in {release.label}{release.elsewhere(missing)}",
                    V1_LOGITS_FIX
                    if missing.startswith(V1_LOGITS_MODULE)
                    else "import it from where this release defines it, or guard the import for the releases "
                    "that have it",
                )
