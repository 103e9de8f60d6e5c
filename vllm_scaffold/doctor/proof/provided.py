"""The vLLM names the plugin provides itself: the link "the name is vLLM's" of a finding's proof.

A name under `vllm.` that vLLM does not define is no failure when the plugin puts it there: a module it installs
inside vLLM's namespace (`vllm/<its own package>/`, and every name in it), an attribute it assigns on a vLLM
module or class (`vllm.config.ModelConfig.extra = ...`, `setattr(vllm_module, "Name", value)`), or a module it
places in `sys.modules` (that module only: what the object placed there holds is not known, and a copy of
vLLM's module lacks what vLLM's lacks). Each is found in any of the package's modules, at any depth.
"""

from __future__ import annotations

import ast

from vllm_scaffold.doctor.reading.package import PluginPackage
from vllm_scaffold.doctor.reading.source import aliases, qualified

# The mark of a name provided as a whole module whose names are the plugin's own (a file it installs).
_WITH_NAMES = "/"


def provided_names(package: PluginPackage) -> dict[str, str]:
    """vLLM dotted name -> where the plugin provides it."""
    found: dict[str, str] = {}
    for name, module in sorted(package.modules.items()):
        if name == "vllm" or name.startswith("vllm."):
            found.setdefault(name + _WITH_NAMES, module.rel)
        if module.tree is None:
            continue
        table = aliases(module)
        for node in module.of_type(ast.Assign, ast.AnnAssign, ast.Call):
            for provided in _provides(node, table):
                if provided.startswith("vllm."):
                    found.setdefault(provided, module.where(node))
    return found


def _provides(node: ast.AST, table: dict[str, str]) -> list[str]:
    if isinstance(node, ast.Assign | ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        names = []
        for target in targets:
            for element in target.elts if isinstance(target, ast.Tuple) else [target]:
                if isinstance(element, ast.Attribute):
                    names.append(qualified(element, table))
                elif isinstance(element, ast.Subscript) and _is_sys_modules(element.value, table):
                    names.append(_text(element.slice))
        return [name for name in names if name]
    if isinstance(node, ast.Call):
        func = qualified(node.func, table) if isinstance(node.func, ast.Name | ast.Attribute) else None
        if func in {"setattr", "builtins.setattr"} and len(node.args) >= 2:
            owner = qualified(node.args[0], table) if isinstance(node.args[0], ast.Name | ast.Attribute) else None
            attribute = _text(node.args[1])
            return [f"{owner}.{attribute}"] if owner and attribute else []
        if isinstance(node.func, ast.Attribute) and node.func.attr == "setdefault" and node.args:
            if _is_sys_modules(node.func.value, table):
                return [text] if (text := _text(node.args[0])) else []
    return []


def _is_sys_modules(expr: ast.expr, table: dict[str, str]) -> bool:
    return isinstance(expr, ast.Name | ast.Attribute) and qualified(expr, table) == "sys.modules"


def _text(expr: ast.expr) -> str | None:
    return expr.value if isinstance(expr, ast.Constant) and isinstance(expr.value, str) else None


def installer(provided: dict[str, str], name: str) -> str | None:
    """The file of its own the plugin installs in vLLM's namespace that `name` lies in, or None: such a name
    is the plugin's wherever and whenever it is read."""
    parts = name.split(".")
    for cut in range(len(parts), 1, -1):
        where = provided.get(".".join(parts[:cut]) + _WITH_NAMES)
        if where is not None:
            return where
    return None


def provider(provided: dict[str, str], name: str) -> str | None:
    """Where the plugin provides `name`: sets it, or installs a module of its own that `name` lies in; or None."""
    return provided.get(name) or installer(provided, name)
