"""Every registration point of one vLLM release: the functions and methods through which code adds an entry
to one of vLLM's registries, read from the parsed sources.

A registration point is a public function or method named `register` or `register_*` that stores into state
which outlives the call, found by what its body does rather than by the name of its class:
- a module-level function that stores into a module-level container (`_LOADERS[name] = cls`,
  `METHODS.append(name)`), directly or in the decorator it returns;
- a classmethod or staticmethod that stores into a container of its class (`cls._registry[name] = ...`,
  `CustomOp.op_registry[name] = ...`) or of its module;
- a method of a class vLLM keeps module-level instances of (`ModelRegistry = _ModelRegistry(...)`), which
  stores into `self.X`: the point is named by the instance a caller uses (`...registry.ModelRegistry.register_model`),
  one per instance;
- a method of a class whose instances are themselves kept in a registry (`IrOp.registry[name] = op` makes
  `IrOp.register_impl` one), storing into `self.X`;
- a decorator that sets an attribute on the class it decorates (`MULTIMODAL_REGISTRY.register_processor`);
- a public `register*` function that forwards one of its own parameters to a registration point above
  (`register_kv_cache_spec` calls `KVCacheSpecRegistry.register`): a second name for the same registry.
  A function that registers vLLM's own entries (`register_lazy_tool_parsers()`, no parameters) is not one.

What is left out by these rules, on purpose: methods of objects vLLM creates per engine or per model
(`LoRAModelManager.register_module`, a connector's `register_kv_caches`), names such as `unregister` or
`registered_*`, and functions that register with torch or another library rather than with vLLM.

Each point maps to {"kind": function|classmethod|staticmethod|method, "fills": [containers it stores into],
"member": the class member (method points reached through an instance), "via": [points it forwards to]}.
"""

from __future__ import annotations

import ast

from vllm_scaffold.vllm_facts.index import ReleaseIndex
from vllm_scaffold.vllm_facts.syntax import runtime_statements

# Calls that add to the container they are called on.
_MUTATORS = {"append", "add", "update", "setdefault", "extend", "insert", "__setitem__"}
DECORATED = "<decorated class>"


def is_registration_name(name: str) -> bool:
    return name == "register" or name.startswith("register_")


def _decorators(node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    return {d.id if isinstance(d, ast.Name) else getattr(d, "attr", "") for d in node.decorator_list}


def _kind(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    decorators = _decorators(node)
    return next((kind for kind in ("classmethod", "staticmethod") if kind in decorators), "method")


class _Module:
    """What one module's top level binds, for telling module state from a function's locals."""

    def __init__(self, name: str, tree: ast.Module, imports: dict[str, str]) -> None:
        self.name = name
        self.statements = list(runtime_statements(tree.body))
        self.imports = imports
        self.classes = {s.name: s for s in self.statements if isinstance(s, ast.ClassDef)}
        self.functions = {s.name: s for s in self.statements if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
        self.assigned: set[str] = set()
        for stmt in self.statements:
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                self.assigned.update(t.id for t in targets if isinstance(t, ast.Name))

    def qualify(self, name: str) -> str | None:
        """The qualified name a top-level name of this module stands for."""
        if name in self.classes or name in self.functions or name in self.assigned:
            return f"{self.name}.{name}"
        return self.imports.get(name)

    def instances(self) -> list[tuple[str, str]]:
        """(instance name, qualified class) for every `NAME = Class(...)` at the top level."""
        found = []
        for stmt in self.statements:
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and isinstance(stmt.value, ast.Call):
                func = stmt.value.func
                cls = self.qualify(func.id) if isinstance(func, ast.Name) else None
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                found += [(t.id, cls) for t in targets if isinstance(t, ast.Name) and cls]
        return found


def _locals(func: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[set[str], set[str], set[str]]:
    """(names bound inside the function, names it declares global, parameters of it and its nested functions)."""
    bound: set[str] = set()
    declared: set[str] = set()
    params: set[str] = set()
    for node in ast.walk(func):
        if isinstance(node, ast.Global):
            declared.update(node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        elif isinstance(node, ast.arg):
            params.add(node.arg)
    return bound - declared, declared, params


def _fills(
    func: ast.FunctionDef | ast.AsyncFunctionDef, module: _Module, cls: ast.ClassDef | None, self_state: bool
) -> list[str]:
    """The containers outside the call that `func` (and the functions nested in it) store into."""
    bound, declared, params = _locals(func)
    first = func.args.args[0].arg if func.args.args else None
    kind = _kind(func)
    outer_params = {a.arg for a in [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]}

    def container(expr: ast.expr) -> str | None:
        if isinstance(expr, ast.Subscript):
            return container(expr.value)
        if isinstance(expr, ast.Name):
            if expr.id in declared or (expr.id in module.assigned and expr.id not in bound | params):
                return f"{module.name}.{expr.id}"
            return None
        if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name):
            owner = expr.value.id
            if cls is not None and owner == cls.name:
                return f"{module.name}.{cls.name}.{expr.attr}"
            if cls is not None and owner == first and (kind == "classmethod" or self_state):
                return f"{module.name}.{cls.name}.{expr.attr}"
            if owner in module.classes and owner not in bound | params:
                return f"{module.name}.{owner}.{expr.attr}"
        return None

    found: set[str] = set()
    for node in ast.walk(func):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for target in targets:
            for item in target.elts if isinstance(target, ast.Tuple) else [target]:
                if isinstance(item, ast.Subscript):
                    found.add(container(item.value) or "")
                elif (
                    isinstance(item, ast.Attribute)
                    and isinstance(item.value, ast.Name)
                    and item.value.id in params - outer_params
                ):
                    found.add(f"{DECORATED}.{item.attr}")  # a decorator marking the class it is given
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _MUTATORS:
            found.add(container(node.func.value) or "")
    return sorted(found - {""})


def _candidates(module: _Module) -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef, ast.ClassDef | None]]:
    """(qualified name, definition, class) of every public `register*` function and method of the module."""
    found = []
    for name, node in module.functions.items():
        if is_registration_name(name):
            found.append((f"{module.name}.{name}", node, None))
    for cls in module.classes.values():
        for stmt in runtime_statements(cls.body):
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and is_registration_name(stmt.name):
                found.append((f"{module.name}.{cls.name}.{stmt.name}", stmt, cls))
    return found


def read_registration_points(index: ReleaseIndex, trees: dict[str, ast.Module]) -> dict[str, dict]:
    parsed = {name: _Module(name, tree, index.imports_in(name)) for name, tree in trees.items()}
    instances: dict[str, list[str]] = {}  # qualified class -> its module-level instances
    for module in parsed.values():
        for instance, cls in module.instances():
            instances.setdefault(cls, []).append(f"{module.name}.{instance}")
    points: dict[str, dict] = {}
    methods: list[tuple[str, _Module, ast.FunctionDef | ast.AsyncFunctionDef, ast.ClassDef]] = []
    for module in parsed.values():
        for qualname, node, cls in _candidates(module):
            kind = "function" if cls is None else _kind(node)
            if kind == "method":
                assert cls is not None
                methods.append((qualname, module, node, cls))
                continue
            fills = _fills(node, module, cls, self_state=False)
            if fills:
                points[qualname] = {"kind": kind, "fills": fills}
    # Classes whose instances a registration point keeps: `IrOp.registry[name] = op`.
    registered_classes = {container.rpartition(".")[0] for point in points.values() for container in point["fills"]} & {
        f"{m.name}.{c}" for m in parsed.values() for c in m.classes
    }
    for qualname, module, node, cls in methods:
        fills = _fills(node, module, cls, self_state=True)
        if not fills:
            continue
        owner = f"{module.name}.{cls.name}"
        for instance in sorted(instances.get(owner, [])):
            points[f"{instance}.{node.name}"] = {"kind": "method", "fills": fills, "member": qualname}
        if owner in registered_classes:
            points[qualname] = {"kind": "method", "fills": fills}
    _add_forwarders(index, parsed, points)
    return dict(sorted(points.items()))


def _add_forwarders(index: ReleaseIndex, parsed: dict[str, _Module], points: dict[str, dict]) -> None:
    """Public `register*` functions and classmethods that pass one of their parameters on to a known point,
    until no more are found (a forwarder of a forwarder)."""
    changed = True
    while changed:
        changed = False
        for module in parsed.values():
            for qualname, node, cls in _candidates(module):
                if qualname in points or (cls is not None and _kind(node) == "method"):
                    continue
                via = _forwards_to(index, node, module, points)
                if via:
                    points[qualname] = {"kind": "function" if cls is None else _kind(node), "fills": [], "via": via}
                    changed = True


def _forwards_to(
    index: ReleaseIndex, func: ast.FunctionDef | ast.AsyncFunctionDef, module: _Module, points: dict[str, dict]
) -> list[str]:
    _bound, _declared, params = _locals(func)
    own = {a.arg for a in [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]}
    if func.args.args and _kind(func) == "classmethod":
        own.discard(func.args.args[0].arg)
    if not own:
        return []
    via: set[str] = set()
    for node in ast.walk(func):
        if not isinstance(node, ast.Call):
            continue
        target = _called(index, node.func, module)
        if target not in points:
            continue
        passed = {
            n.id
            for arg in [*node.args, *(k.value for k in node.keywords)]
            for n in ast.walk(arg)
            if isinstance(n, ast.Name)
        }
        if passed & params:
            via.add(target)
    return sorted(via)


def _called(index: ReleaseIndex, func: ast.expr, module: _Module) -> str | None:
    """The qualified name a call's function stands for, followed through re-exports."""
    if isinstance(func, ast.Name):
        name = module.qualify(func.id)
        if name is None or not name.startswith("vllm."):
            return name
        symbol = index.resolve(name)
        return symbol.qualname if symbol.exists else name
    if isinstance(func, ast.Attribute):
        owner = _called(index, func.value, module)
        return f"{owner}.{func.attr}" if owner else None
    return None
