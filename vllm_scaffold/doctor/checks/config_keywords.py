"""A vLLM config class built with a keyword the release's class does not accept.

vLLM's config classes (`vllm.config.*`: ModelConfig, CacheConfig, VllmConfig, ...) are pydantic dataclasses
made by vLLM's `config` decorator, whose pydantic config forbids extra fields (vllm/config/utils.py,
`ConfigDict(extra="forbid")`, 0.31 to 0.34): a keyword that is no field raises a ValidationError
("Unexpected keyword argument") where the class is built. A keyword is provably unknown only when the
release's class and every ancestor are vLLM's, none defines `__init__`, and no class attribute, field or
method of theirs has that name (the index lists every name a class body binds, fields included). A class the
plugin replaces, subclasses or patches the constructor of is the plugin's, and not judged; nor is a script of
the package (a module with `if __name__ == "__main__":` that nothing in the package imports), which vLLM
never runs.
"""

from __future__ import annotations

import ast

from vllm_scaffold.doctor.checks.target import release_check
from vllm_scaffold.doctor.reading.guards import GuardKind, guards
from vllm_scaffold.doctor.reading.package import Module, PluginPackage
from vllm_scaffold.doctor.reading.source import aliases, qualified
from vllm_scaffold.doctor.report.findings import Finding
from vllm_scaffold.vllm_facts import ReleaseIndex, facts

CONFIG_MODULES = "vllm.config."
# A field of every pydantic class that the index leaves out of a class's names (pydantic's own setting).
_UNLISTED_FIELDS = frozenset({"model_config"})
# Guards under which the construction is for another release, or never runs.
_NOT_THIS_RELEASE = frozenset({GuardKind.VLLM_VERSION, GuardKind.TYPE_CHECKING})


@release_check("vllm-config-keyword-unknown")
def config_keywords(package: PluginPackage, index: ReleaseIndex) -> list[Finding]:
    """Each construction of a vLLM config class with a keyword the class in `index` does not accept."""
    replaced: set[str] | None = None  # read once a construction of a vLLM config class is found
    imported = {name for module in package.parsed() for name in aliases(module).values()}
    findings = []
    for module in package.parsed():
        if _is_script(module) and not any(name.startswith(module.name) for name in imported):
            continue  # a script of the package (`python parity_test.py`) that nothing imports: vLLM never runs it
        table = aliases(module)
        for node in module.of_type(ast.Call):
            call: ast.Call = node  # type: ignore[assignment]
            if not call.keywords:
                continue
            written = qualified(call.func, table)
            if not written or not written.startswith("vllm."):
                continue
            if not index.resolve(written).qualname.startswith(CONFIG_MODULES):
                continue
            replaced = _replaced_names(package) if replaced is None else replaced
            accepted = accepted_keywords(index, written, replaced)
            if accepted is None:
                continue
            guard = guards(module).get(id(call))
            if guard is not None and guard.kind in _NOT_THIS_RELEASE:
                continue
            unknown = [k.arg for k in call.keywords if k.arg is not None and k.arg not in accepted]
            if unknown:
                findings.append(_finding(module, call, written, unknown, index))
    return findings


def accepted_keywords(index: ReleaseIndex, written: str, replaced: set[str]) -> set[str] | None:
    """Every keyword the config class `written` accepts in the release, or None when it is not one of vLLM's
    config classes whose fields the index knows in full."""
    symbol = index.resolve(written)
    if symbol.kind != "class" or not symbol.qualname.startswith(CONFIG_MODULES):
        return None
    if {written.rpartition(".")[2], symbol.name} & replaced:
        return None
    order, complete = index.mro(symbol)
    entries = [index.class_entry(cls) for cls in order]
    if not complete or not entries[0].get("g") or any("__init__" in e.get("m", {}) for e in entries):
        return None  # not made by a decorator (no generated __init__), or an ancestor the index cannot read
    return {name for e in entries for name in (*e.get("v", ()), *e.get("m", {}))} | _UNLISTED_FIELDS


def _is_script(module: Module) -> bool:
    """The module ends in `if __name__ == "__main__":` at its top level."""
    return any(
        isinstance(stmt, ast.If)
        and isinstance(stmt.test, ast.Compare)
        and isinstance(stmt.test.left, ast.Name)
        and stmt.test.left.id == "__name__"
        for stmt in module.tree.body  # type: ignore[union-attr]
    )


def _replaced_names(package: PluginPackage) -> set[str]:
    """Names of vLLM classes the plugin replaces or patches the construction of: `vllm.config.X = ...`,
    `setattr(config, "X", ...)`, `X.__init__ = ...` / `X.__new__ = ...`, and its own classes of the same
    name (a subclass built in place of vLLM's)."""
    names: set[str] = set()
    for module in package.parsed():
        table = aliases(module)
        for node in module.of_type(ast.Assign, ast.Call, ast.ClassDef):
            if isinstance(node, ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    name = qualified(target, table) if isinstance(target, ast.Attribute) else None
                    if name and name.startswith("vllm."):
                        owner, _, attr = name.rpartition(".")
                        names.add(owner.rpartition(".")[2] if attr in {"__init__", "__new__"} else attr)
            elif isinstance(node, ast.Call) and qualified(node.func, table) == "setattr" and len(node.args) >= 2:
                target, attr = node.args[0], node.args[1]
                if isinstance(attr, ast.Constant) and isinstance(attr.value, str):
                    owner = qualified(target, table) or ""
                    if attr.value in {"__init__", "__new__"}:
                        names.add(owner.rpartition(".")[2])
                    elif owner.startswith("vllm"):
                        names.add(attr.value)
    return names


def _finding(module: Module, call: ast.Call, written: str, unknown: list[str], index: ReleaseIndex) -> Finding:
    cls = written.rpartition(".")[2]
    names = ", ".join(f"'{name}'" for name in unknown)
    return Finding(
        "vllm-config-keyword-unknown",
        module.where(call),
        f"{cls}(...) is given {names}, which {cls} in vLLM {index.version} does not have, so this line raises a "
        "ValidationError (Unexpected keyword argument). "
        + facts.holding("config-classes-forbid-extra-fields", index.version).claim,
        f"drop or rename the keyword to the field vLLM {index.version}'s {cls} has",
    )
