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

from vllm_scaffold.doctor.checks.target import Target, check
from vllm_scaffold.doctor.reading.guards import ATTRIBUTE_ERRORS, guards
from vllm_scaffold.doctor.reading.package import Module, walk_nodes
from vllm_scaffold.doctor.reading.source import aliases, class_body_names, qualified
from vllm_scaffold.doctor.report.findings import Finding


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


def _config_variables(module: Module, fields: dict[str, str]) -> tuple[set[str], set[str]]:
    """(variables, self attributes) of the module that hold a VllmConfig field's object: parameters annotated
    with vLLM's class (`model_config: ModelConfig` imported from vllm), and names or `self.` attributes
    assigned from `<...>.field` (`scheduler_config = vllm_config.scheduler_config`). An unannotated parameter
    could be anything (another framework's model_config) and is not counted."""
    table = aliases(module)
    variables: set[str] = set()
    attributes: set[str] = set()
    for node in module.of_type(ast.arg, ast.Assign):
        if isinstance(node, ast.arg) and node.arg in fields and node.annotation is not None:
            annotation = node.annotation
            if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
                try:
                    annotation = ast.parse(annotation.value, mode="eval").body
                except SyntaxError:
                    continue
            names = {qualified(n, table) for n in ast.walk(annotation) if isinstance(n, ast.Name | ast.Attribute)}
            if any(n and n.startswith("vllm.") and n.endswith("." + fields[node.arg]) for n in names):
                variables.add(node.arg)
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Attribute):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id == node.value.attr and target.id in fields:
                    variables.add(target.id)
                elif (
                    isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == "self"
                    and target.attr == node.value.attr
                    and target.attr in fields
                ):
                    attributes.add(target.attr)
    return variables, attributes


def _holds_field(holder: ast.expr, fields: dict[str, str], held: tuple[set[str], set[str], set[int]]) -> str | None:
    """The VllmConfig field `holder` is: `vllm_config.f` (`self.vllm_config.f`), or a variable or `self.`
    attribute that holds one (assigned from `<...>.f`, or set by a vLLM base class)."""
    variables, attributes, inherited = held
    if isinstance(holder, ast.Name):
        return holder.id if holder.id in variables else None
    if isinstance(holder, ast.Attribute) and holder.attr in fields:
        owner = holder.value
        name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
        if name == "vllm_config" or (name == "self" and (holder.attr in attributes or id(holder) in inherited)):
            return holder.attr
    return None


def _in_vllm_subclasses(module: Module, fields: dict[str, str]) -> set[int]:
    """id() of every `self.<field>` inside a class derived from a vLLM class (a model runner, a worker): its
    vLLM base sets those attributes from the VllmConfig, unless the class assigns them itself."""
    table = aliases(module)
    found: set[int] = set()
    for node in module.of_type(ast.ClassDef):
        if not isinstance(node, ast.ClassDef):
            continue
        bases = [b.value if isinstance(b, ast.Subscript) else b for b in node.bases]
        if not any((qualified(b, table) or "").startswith("vllm.") for b in bases):
            continue
        inside = walk_nodes(node)
        own = {
            t.attr
            for n in inside
            if isinstance(n, ast.Assign)
            for t in n.targets
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
        }
        found.update(
            id(n)
            for n in inside
            if isinstance(n, ast.Attribute)
            and isinstance(n.value, ast.Name)
            and n.value.id == "self"
            and n.attr in fields
            and n.attr not in own
        )
    return found


@check("vllm-config-attribute-missing")
def config_attributes(target: Target) -> list[Finding]:
    """`<...>.scheduler_config.X` (or a variable named scheduler_config) where SchedulerConfig has no X."""
    ctx = target.environment
    source = ctx.vllm.source
    if source is None:
        return []
    fields = vllm_config_fields(source)
    classes = config_classes(source)
    findings = []
    for module in ctx.package.parsed():
        held = (*_config_variables(module, fields), _in_vllm_subclasses(module, fields))
        for node in module.of_type(ast.Attribute):
            if not isinstance(node, ast.Attribute) or not isinstance(node.ctx, ast.Load):
                continue
            field = _holds_field(node.value, fields, held)
            if field is None or node.attr in _DICT_METHODS or node.attr.startswith("__"):
                continue
            known = classes.get(fields[field])
            if known is None or node.attr in known or id(node) in guards(module, catching=ATTRIBUTE_ERRORS):
                continue
            findings.append(
                Finding(
                    "vllm-config-attribute-missing",
                    module.where(node),
                    f"{field}.{node.attr}: {fields[field]} has no attribute '{node.attr}' in the installed vLLM "
                    f"{ctx.vllm.version}, so reading it raises AttributeError",
                    f"read what this vLLM's {fields[field]} offers (vllm/config/), or test for it with "
                    f"hasattr({field}, '{node.attr}') on the versions that lack it",
                )
            )
    return findings
