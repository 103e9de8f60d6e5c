"""What a function of the package runs: itself, the package's module-level functions it calls, and the code of
the package modules it imports, at any depth.

vLLM calls a general plugin's `register()` and a platform plugin's detector; what they do often sits in
helpers (`_patch_torch()`, `setup_env()`) in the same or another module of the package. Calls are followed
through names bound at a module's top level or imported from a package module, and through "pkg.mod:function"
strings the function reads (the registration tables general plugins loop over). An import of a package module
(at a module's top level, or inside a reached function) runs that module's import-time code, and its parent
packages' `__init__.py` first; so does loading an entry point: `entry_point_reach` starts from the code vLLM
runs when it imports the entry point's module. Nothing is imported.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from vllm_scaffold.doctor.reading.guards import GuardKind, guards
from vllm_scaffold.doctor.reading.package import Module, PluginPackage, walk_nodes
from vllm_scaffold.doctor.reading.source import aliases, function, import_time_nodes, qualified, resolve_relative

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
IMPORT = "import "  # the `via` step of a module's import-time code: "import pkg.mod"
_IMPORT_CALLS = {"importlib.import_module", "__import__"}


@dataclass(frozen=True)
class Reached:
    module: Module
    node: FunctionNode | ast.Module  # a function, or the module itself: the code importing it runs
    via: tuple[str, ...]  # the steps from the start, e.g. ("register", "_patch") or ("register", "import pkg")
    # parameters the call that reaches the function passes a literal True, False or None, with its truth
    known: frozenset[tuple[str, bool]] = frozenset()

    @property
    def at_import(self) -> bool:
        return isinstance(self.node, ast.Module)

    @property
    def where(self) -> str:
        return self.module.where(self.node)

    def running(self) -> list[ast.AST]:
        """The nodes that run: the function's body, or the module's import-time code (no function bodies)."""
        if not isinstance(self.node, ast.Module):
            nodes = walk_nodes(self.node)
            if not self.known:
                return nodes
            skipped = {id(n) for branch in _branches_not_taken(self.node, self.known) for n in walk_nodes(branch)}
            return [n for n in nodes if id(n) not in skipped]
        body = self.node.body
        return self.module.memoised("import-time-nodes", lambda: list(import_time_nodes(body)))


def _branches_not_taken(node: FunctionNode, known: frozenset[tuple[str, bool]]) -> Iterator[ast.stmt]:
    """The statements of `node` that `if PARAM:` / `if not PARAM:` skip for the PARAMs whose truth is known."""
    truth = dict(known)
    for child in walk_nodes(node):
        if not isinstance(child, ast.If):
            continue
        test, negated = child.test, False
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            test, negated = test.operand, True
        if isinstance(test, ast.Name) and test.id in truth:
            yield from child.orelse if truth[test.id] != negated else child.body


def _literal_arguments(call: ast.Call, node: FunctionNode) -> frozenset[tuple[str, bool]]:
    """The parameters of `node` that `call` passes a literal True, False or None, or leaves at such a default,
    each with its truth."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return frozenset()  # *args or **kwargs: what each parameter gets cannot be told
    positional = [*node.args.posonlyargs, *node.args.args]
    names = [a.arg for a in positional]
    passed: dict[str, ast.expr] = dict(
        zip(names[len(names) - len(node.args.defaults) :], node.args.defaults, strict=True)
    )
    passed.update((a.arg, d) for a, d in zip(node.args.kwonlyargs, node.args.kw_defaults, strict=True) if d is not None)
    passed.update(zip(names, call.args, strict=False))
    passed.update((k.arg, k.value) for k in call.keywords if k.arg)
    return frozenset(
        (name, bool(value.value))
        for name, value in passed.items()
        if isinstance(value, ast.Constant) and (value.value is None or isinstance(value.value, bool))
    )


def steps(via: tuple[str, ...]) -> str:
    """The steps after the start, as the report says them: "import pkg.mod -> apply()"."""
    return " -> ".join(step if step.startswith(IMPORT) else f"{step}()" for step in via[1:])


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
    return module.memoised("reach-tables", lambda: _read_module_strings(module))


def _read_module_strings(module: Module) -> dict[str, list[str]]:
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


def _with_parents(dotted: str) -> list[str]:
    """ "a.b.c" -> ["a", "a.b", "a.b.c"]: what importing it runs, parents first."""
    parts = dotted.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


def _imported(module: Module, node: ast.AST) -> list[str]:
    """The dotted names an import statement makes Python import, parents first."""
    if isinstance(node, ast.Import):
        return [name for alias in node.names for name in _with_parents(alias.name)]
    if isinstance(node, ast.ImportFrom):
        source = resolve_relative(module, node)
        return [*_with_parents(source), *(f"{source}.{a.name}" for a in node.names if a.name != "*")]
    return []


def _callees(
    package: PluginPackage, current: Reached
) -> Iterator[tuple[Module, FunctionNode | ast.Module, str, frozenset[tuple[str, bool]]]]:
    """What running `current` runs next: the package functions it calls (with their name, and the parameters
    the call passes a literal truth value) and the package modules it imports (with "import NAME"), in the order it
    names them."""
    module = current.module
    table = aliases(module)
    tables = _module_strings(module)
    skipped = guards(module) if current.at_import else {}
    for child in current.running():
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            guard = skipped.get(id(child))
            if guard is not None and guard.kind is GuardKind.TYPE_CHECKING:
                continue  # never runs
            for name in _imported(module, child):
                if (imported := package.modules.get(name)) is not None and imported.tree is not None:
                    yield imported, imported.tree, IMPORT + name, frozenset()
        elif isinstance(child, ast.Call):
            called = qualified(child.func, table)
            if called is None:
                continue
            if called in _IMPORT_CALLS and child.args and isinstance(child.args[0], ast.Constant):
                text = child.args[0].value
                for dotted in _with_parents(text) if isinstance(text, str) else ():
                    if (imported := package.modules.get(dotted)) is not None and imported.tree is not None:
                        yield imported, imported.tree, IMPORT + dotted, frozenset()
                continue
            local = function(module, called) if "." not in called else None
            if local is not None:
                yield module, local, local.name, _literal_arguments(child, local)
            elif (found := _resolve(package, called)) is not None:
                yield found[0], found[1], found[1].name, _literal_arguments(child, found[1])
        elif isinstance(child, ast.Constant) and isinstance(child.value, str) and ":" in child.value:
            if (found := _resolve(package, child.value)) is not None:
                yield found[0], found[1], found[1].name, frozenset()
        elif isinstance(child, ast.Name) and child.id in tables:
            for text in tables[child.id]:
                if (found := _resolve(package, text)) is not None:
                    yield found[0], found[1], found[1].name, frozenset()


def _closure(package: PluginPackage, start: Iterable[Reached]) -> list[Reached]:
    """`start` and everything it runs, each once (a function once per set of literal arguments), with the
    steps that reach it."""
    found: list[Reached] = []
    seen: set[tuple[int, frozenset[tuple[str, bool]]]] = set()
    for reached in start:
        if (id(reached.node), reached.known) not in seen:
            seen.add((id(reached.node), reached.known))
            found.append(reached)
    index = 0
    while index < len(found):
        current = found[index]
        index += 1
        for callee_module, callee, step, known in _callees(package, current):
            if (id(callee), known) not in seen:
                seen.add((id(callee), known))
                found.append(Reached(callee_module, callee, (*current.via, step), known))
    return found


def reached_functions(package: PluginPackage, module: Module, node: FunctionNode) -> list[Reached]:
    """`node` and every package function it calls and package module it imports, each once, with the steps
    that reach it."""
    return _closure(package, [Reached(module, node, (node.name,))])


def entry_point_reach(
    package: PluginPackage, module: Module, node: FunctionNode
) -> tuple[list[Reached], list[Reached]]:
    """What loading and calling the entry point `module:node` runs: first what importing `module` runs (its
    parent packages' and its own import-time code, and every package module and function that reaches, at any
    depth), then the call: the function and what it reaches that the import did not (each once)."""
    modules = [package.modules.get(name) for name in _with_parents(module.name)]
    imports = [Reached(m, m.tree, (node.name, IMPORT + m.name)) for m in modules if m is not None and m.tree]
    imported = _closure(package, imports)
    listed = {(id(r.node), r.known) for r in imported}
    called = [r for r in reached_functions(package, module, node) if (id(r.node), r.known) not in listed]
    return imported, called
