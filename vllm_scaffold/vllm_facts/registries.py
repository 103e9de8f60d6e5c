"""The in-tree registries of one vLLM release, read from its parsed sources.

Each list is what vLLM itself registers, found where vLLM defines it rather than by searching for words:
- entry-point groups: the group argument of every `load_plugins_by_group(...)` / `entry_points(group=...)`
  call, resolved through module constants and imports (groups loaded through `load_plugins_by_group` obey
  `VLLM_PLUGINS`);
- attention backends: the members of `AttentionBackendEnum` (and, apart, `MambaAttentionBackendEnum`);
- quantization methods: the strings of the `QuantizationMethods` Literal;
- KV connectors: the names of the module-level `KVConnectorFactory.register_connector(...)` calls;
- model architectures: the keys of the dicts `_VLLM_MODELS` is merged from;
- HTTP routes: "METHOD /path" of every route vLLM's API servers declare in `vllm.entrypoints` (`routes.py`);
- CustomOps: every class that inherits, through any chain of vLLM classes, from `CustomOp` or
  `PluggableLayer` in `custom_op` modules, keyed by class name (what `register_oot` matches), with the name
  of its `@CustomOp.register("...")` decorator ("" when it has none);
- registration points: every function and method through which anything registers with one of vLLM's
  registries, with the containers it fills (`registration_points.py`).
"""

from __future__ import annotations

import ast

from vllm_scaffold.vllm_facts.index import ReleaseIndex, Symbol
from vllm_scaffold.vllm_facts.registration_points import read_registration_points
from vllm_scaffold.vllm_facts.routes import declared_routes

_OP_ROOTS = {"CustomOp", "PluggableLayer"}


def read_registries(modules: dict[str, dict], trees: dict[str, ast.Module]) -> dict:
    index = ReleaseIndex({"vllm": "", "modules": modules})
    return {
        "entry_point_groups": _entry_point_groups(index, trees),
        "registries": {
            "attention_backends": _enum_members(trees, "AttentionBackendEnum"),
            "mamba_attention_backends": _enum_members(trees, "MambaAttentionBackendEnum"),
            "quantization_methods": _quantization_methods(trees),
            "kv_connectors": _factory_names(trees, "KVConnectorFactory", "register_connector"),
            "offloading_specs": _factory_names(trees, "OffloadingSpecFactory", "register_spec"),
            "architectures": _architectures(trees),
            "http_routes": _http_routes(trees),
        },
        "custom_ops": _custom_ops(index),
        "registration_points": read_registration_points(index, trees),
    }


def _http_routes(trees: dict[str, ast.Module]) -> list[str]:
    found = {
        route
        for module, tree in trees.items()
        if module == "vllm.entrypoints" or module.startswith("vllm.entrypoints.")
        for route, _ in declared_routes(tree)
    }
    return sorted(found)


def _constant(index: ReleaseIndex, trees: dict[str, ast.Module], module: str, expr: ast.expr) -> str | None:
    """The string an argument evaluates to: a literal, or a module constant (followed through imports)."""
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return expr.value
    if not isinstance(expr, ast.Name):
        return None
    target = index.imports_in(module).get(expr.id)
    if target:
        owner, _, name = target.rpartition(".")
        if owner in trees:
            return _constant(index, trees, owner, ast.Name(id=name))
        return None
    for stmt in trees[module].body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == expr.id for t in stmt.targets):
            return _constant(index, trees, module, stmt.value)
    return None


def _entry_point_groups(index: ReleaseIndex, trees: dict[str, ast.Module]) -> dict[str, dict]:
    groups: dict[str, dict] = {}
    for module, tree in trees.items():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            if func == "load_plugins_by_group":
                argument = (
                    node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "group"), None)
                )
            elif func == "entry_points":
                argument = next((k.value for k in node.keywords if k.arg == "group"), None)
            else:
                continue
            group = _constant(index, trees, module, argument) if argument is not None else None
            if group and group.startswith("vllm."):
                entry = groups.setdefault(group, {"filtered": False, "read_in": []})
                entry["filtered"] = entry["filtered"] or func == "load_plugins_by_group"
                if module not in entry["read_in"]:
                    entry["read_in"].append(module)
    return {group: {**groups[group], "read_in": sorted(groups[group]["read_in"])} for group in sorted(groups)}


def _enum_members(trees: dict[str, ast.Module], enum: str) -> list[str]:
    """The members of an attention-backend enum, but CUSTOM: the slot left for plugins."""
    members: set[str] = set()
    for tree in trees.values():
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name == enum:
                for stmt in node.body:
                    if isinstance(stmt, ast.Assign):
                        members.update(t.id for t in stmt.targets if isinstance(t, ast.Name) and t.id.isupper())
    return sorted(members - {"CUSTOM"})


def _quantization_methods(trees: dict[str, ast.Module]) -> list[str]:
    for tree in trees.values():
        for node in tree.body:
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Subscript):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, ast.Name) and t.id == "QuantizationMethods" for t in targets):
                    return sorted(
                        c.value
                        for c in ast.walk(node.value)
                        if isinstance(c, ast.Constant) and isinstance(c.value, str)
                    )
    return []


def _factory_names(trees: dict[str, ast.Module], factory: str, method: str) -> list[str]:
    """The names a release registers itself with module-level `Factory.method("name", ...)` calls."""
    names: set[str] = set()
    for tree in trees.values():
        for node in tree.body:
            call = node.value if isinstance(node, ast.Expr) else None
            if (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Attribute)
                and call.func.attr == method
                and isinstance(call.func.value, ast.Name)
                and call.func.value.id == factory
                and call.args
                and isinstance(call.args[0], ast.Constant)
            ):
                names.add(str(call.args[0].value))
    return sorted(names)


def _architectures(trees: dict[str, ast.Module]) -> list[str]:
    for tree in trees.values():
        dicts: dict[str, ast.Dict] = {}
        for node in tree.body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
                dicts.update((t.id, node.value) for t in node.targets if isinstance(t, ast.Name))
        if "_VLLM_MODELS" in dicts:
            return sorted(_dict_keys(dicts, "_VLLM_MODELS", set()))
    return []


def _dict_keys(dicts: dict[str, ast.Dict], name: str, seen: set[str]) -> set[str]:
    keys: set[str] = set()
    if name in seen or name not in dicts:
        return keys
    seen.add(name)
    for key, value in zip(dicts[name].keys, dicts[name].values, strict=True):
        if key is None and isinstance(value, ast.Name):  # **_OTHER_MODELS
            keys |= _dict_keys(dicts, value.id, seen)
        elif isinstance(key, ast.Constant) and isinstance(key.value, str):
            keys.add(key.value)
    return keys


def _custom_ops(index: ReleaseIndex) -> dict[str, str]:
    """Class name -> registry name for every CustomOp/PluggableLayer subclass, found by class hierarchy."""
    verdict: dict[Symbol, bool] = {}

    def is_op(symbol: Symbol, path: frozenset[Symbol] = frozenset()) -> bool:
        if symbol in verdict:
            return verdict[symbol]
        if symbol in path:
            return False
        if symbol.name in _OP_ROOTS and symbol.module.rsplit(".", 1)[-1] == "custom_op":
            result = True
        else:
            result = any(is_op(base, path | {symbol}) for base in index.bases(symbol) if base.kind == "class")
        verdict[symbol] = result
        return result

    ops: dict[str, str] = {}
    for symbol in index.classes():
        name = symbol.name
        if is_op(symbol) and name not in _OP_ROOTS:
            ops[name] = ops.get(name) or index.registered_name(symbol)
    return dict(sorted(ops.items()))
