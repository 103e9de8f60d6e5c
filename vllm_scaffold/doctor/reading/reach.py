"""What a function of the package runs: itself and the package's module-level functions it calls, at any depth.

vLLM calls a general plugin's `register()` and a platform plugin's detector; what they do often sits in
helpers (`_patch_torch()`, `setup_env()`) in the same or another module of the package. Calls are followed
through names bound at a module's top level or imported from a package module, and through "pkg.mod:function"
strings the function reads (the registration tables general plugins loop over). Nothing is imported.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from vllm_scaffold.doctor.reading.package import Module, PluginPackage
from vllm_scaffold.doctor.reading.source import aliases, function, qualified

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True)
class Reached:
    module: Module
    node: FunctionNode
    via: tuple[str, ...]  # the call chain from the start, e.g. ("register", "_patch")

    @property
    def where(self) -> str:
        return self.module.where(self.node)


def _resolve(package: PluginPackage, dotted: str) -> tuple[Module, FunctionNode] | None:
    """The package function `dotted` ("pkg.mod.func" or "pkg.mod:func") names, if any."""
    if ":" in dotted:
        module_name, _, name = dotted.partition(":")
    else:
        module_name, _, name = dotted.rpartition(".")
    module = package.modules.get(module_name.strip())
    node = function(module, name.strip()) if module else None
    return (module, node) if module and node else None


def _module_strings(module: Module) -> dict[str, list[str]]:
    """Top-level NAME -> the strings its value holds (a registration table)."""
    tables: dict[str, list[str]] = {}
    for stmt in module.tree.body if module.tree else ():
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [getattr(stmt, "target", None)]
        value = getattr(stmt, "value", None)
        if value is None:
            continue
        strings = [n.value for n in ast.walk(value) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
        for target in targets:
            if isinstance(target, ast.Name) and strings:
                tables[target.id] = strings
    return tables


def _callees(package: PluginPackage, module: Module, node: FunctionNode) -> Iterator[tuple[Module, FunctionNode]]:
    table = aliases(module)
    tables = _module_strings(module)
    for child in ast.walk(node):
        if isinstance(child, ast.Call):
            name = qualified(child.func, table)
            if name is None:
                continue
            local = function(module, name) if "." not in name else None
            if local is not None:
                yield module, local
            elif (found := _resolve(package, name)) is not None:
                yield found
        elif isinstance(child, ast.Constant) and isinstance(child.value, str) and ":" in child.value:
            if (found := _resolve(package, child.value)) is not None:
                yield found
        elif isinstance(child, ast.Name) and child.id in tables:
            for text in tables[child.id]:
                if (found := _resolve(package, text)) is not None:
                    yield found


def reached_functions(package: PluginPackage, module: Module, node: FunctionNode) -> list[Reached]:
    """`node` and every package function it calls, each once, with the chain of calls that reaches it."""
    found = [Reached(module, node, (node.name,))]
    seen = {id(node)}
    index = 0
    while index < len(found):
        current = found[index]
        index += 1
        for callee_module, callee in _callees(package, current.module, current.node):
            if id(callee) not in seen:
                seen.add(id(callee))
                found.append(Reached(callee_module, callee, (*current.via, callee.name)))
    return found
