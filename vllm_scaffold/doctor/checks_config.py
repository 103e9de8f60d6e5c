"""Attributes a plugin reads from vLLM's config objects that the installed vLLM's config classes lack.

Plugins reach the engine's settings through `vllm_config.scheduler_config.X`, `model_config.X` and the like;
when vLLM drops a setting (`scheduler_config.is_multi_step` went with multi-step scheduling) the read raises
AttributeError in the process that runs it, often long after start-up. The config classes are read from the
installed `vllm/config/*.py` as ASTs: each `VllmConfig` field's class, and every name its instances have
(fields, class attributes, methods, properties, `self.X = ...` in any method, inherited ones included).
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

from vllm_scaffold.doctor.context import Context
from vllm_scaffold.doctor.findings import Finding, error
from vllm_scaffold.doctor.guards import ATTRIBUTE_ERRORS, guards
from vllm_scaffold.doctor.package import Module
from vllm_scaffold.doctor.source import class_body_names


def _class_names(node: ast.ClassDef) -> tuple[set[str], bool]:
    """(the names the class's instances have from its own body, whether it resolves names dynamically)."""
    names = class_body_names(node)
    for child in ast.walk(node):
        if isinstance(child, ast.Attribute) and isinstance(child.ctx, ast.Store):
            if isinstance(child.value, ast.Name) and child.value.id == "self":
                names.add(child.attr)
    return names, bool({"__getattr__", "__getattribute__"} & names)


@cache
def config_classes(source: Path) -> dict[str, frozenset[str] | None]:
    """Config class name -> every name its instances have (None: unknowable, e.g. a __getattr__ or a base
    outside vllm/config)."""
    own: dict[str, tuple[set[str], bool, list[str]]] = {}
    for path in sorted((source / "config").glob("*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (OSError, SyntaxError, UnicodeDecodeError):
            continue
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                names, dynamic = _class_names(node)
                bases = [b.id if isinstance(b, ast.Name) else getattr(b, "attr", "?") for b in node.bases]
                own[node.name] = (names, dynamic, bases)

    def collect(name: str, seen: frozenset[str]) -> frozenset[str] | None:
        if name not in own or name in seen:
            return None
        names, dynamic, bases = own[name]
        if dynamic:
            return None
        total = set(names)
        for base in bases:
            if base in {"object", "Generic", "ABC", "Protocol", "BaseModel", "SupportsHash"}:
                continue
            inherited = collect(base, seen | {name})
            if inherited is None:
                return None
            total |= inherited
        return frozenset(total)

    return {name: collect(name, frozenset()) for name in own}


@cache
def vllm_config_fields(source: Path) -> dict[str, str]:
    """VllmConfig field name -> the config class its annotation names (`scheduler_config` -> SchedulerConfig)."""
    classes = config_classes(source)
    try:
        tree = ast.parse((source / "config" / "vllm.py").read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return {}
    fields: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "VllmConfig":
            for stmt in node.body:
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                    named = {n.id for n in ast.walk(stmt.annotation) if isinstance(n, ast.Name)} - {"None"}
                    if len(named) == 1 and (name := named.pop()) in classes:
                        fields[stmt.target.id] = name
    return fields


# Methods of a dict: a variable that calls them holds a dict named like a config, not the config.
_DICT_METHODS = {"get", "items", "keys", "values", "update", "pop", "setdefault", "copy"}


def _config_variables(module: Module, fields: dict[str, str]) -> set[str]:
    """Names in the module that hold a VllmConfig field's object: parameters named after the field (without
    an annotation, or annotated with its class) and variables assigned from `<...>.field`."""
    held: set[str] = set()
    for node in module.of_type(ast.arg, ast.Assign):
        if isinstance(node, ast.arg) and node.arg in fields:
            annotation = ast.unparse(node.annotation) if node.annotation else ""
            if not annotation or fields[node.arg] in annotation:
                held.add(node.arg)
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Attribute):
            held.update(
                t.id for t in node.targets if isinstance(t, ast.Name) and t.id in fields and node.value.attr == t.id
            )
    return held


def _holds_field(holder: ast.expr, fields: dict[str, str], variables: set[str]) -> str | None:
    """The VllmConfig field `holder` is: `vllm_config.f` / `self.vllm_config.f` / `self.f`, or a variable
    that holds one."""
    if isinstance(holder, ast.Name):
        return holder.id if holder.id in variables else None
    if isinstance(holder, ast.Attribute) and holder.attr in fields:
        owner = holder.value
        name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
        return holder.attr if name in {"vllm_config", "self"} else None
    return None


def config_attributes(ctx: Context) -> list[Finding]:
    """`<...>.scheduler_config.X` (or a variable named scheduler_config) where SchedulerConfig has no X."""
    source = ctx.vllm.source
    if source is None:
        return []
    fields = vllm_config_fields(source)
    classes = config_classes(source)
    findings = []
    for module in ctx.package.parsed():
        guarded = guards(module, catching=ATTRIBUTE_ERRORS)
        variables = _config_variables(module, fields)
        for node in module.of_type(ast.Attribute):
            if not isinstance(node.ctx, ast.Load) or id(node) in guarded:  # type: ignore[attr-defined]
                continue
            field = _holds_field(node.value, fields, variables)
            if field is None or node.attr in _DICT_METHODS or node.attr.startswith("__"):
                continue
            known = classes.get(fields[field])
            if known is None or node.attr in known:
                continue
            findings.append(
                error(
                    "vllm-config-attribute-missing",
                    module.where(node),
                    f"{field}.{node.attr}: {fields[field]} has no attribute '{node.attr}' in the installed vLLM "
                    f"{ctx.vllm.version}, so reading it raises AttributeError",
                    f"read what this vLLM's {fields[field]} offers (vllm/config/), or test for it with "
                    f"hasattr({field}, '{node.attr}') on the versions that lack it",
                )
            )
    return findings
