"""AST helpers: what a package module imports, which names it binds, what runs when it is imported.

Nothing here imports the package: the checks must also work on a plugin that fails to import.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial

from vllm_scaffold.doctor.reading.package import Module, PluginPackage, walk_nodes

# vLLM registration APIs: a call to one of these only affects the process that makes it.
REGISTRATION_APIS = frozenset(
    {
        "register_backend",
        "register_quantization_config",
        "register_linear_kernel",
        "register_oot",
        "register_connector",
        "register_spec",
        "register_model",
        "register_resolver",
        "register_lazy_module",
    }
)


@dataclass(frozen=True)
class Call:
    """A call or decorator of a function named `api`, with its arguments (empty for a bare decorator)."""

    module: Module
    node: ast.AST
    api: str
    receiver: str | None  # the qualified name of what `api` is an attribute of, e.g. "vllm....CustomOp"
    args: tuple[ast.expr, ...]
    keywords: dict[str, ast.expr]

    @property
    def where(self) -> str:
        return self.module.where(self.node)

    def argument(self, position: int | None, keyword: str) -> ast.expr | None:
        """The argument passed as `keyword`, or at `position` (None: keyword-only)."""
        if keyword in self.keywords:
            return self.keywords[keyword]
        return self.args[position] if position is not None and len(self.args) > position else None

    def constant(self, position: int | None, keyword: str) -> str | None:
        """The argument's string value: a literal, or a name bound to one at the module's top level."""
        value = self.argument(position, keyword)
        if isinstance(value, ast.Name):
            return string_constants(self.module).get(value.id)
        return value.value if isinstance(value, ast.Constant) and isinstance(value.value, str) else None


def string_constants(module: Module) -> dict[str, str]:
    """NAME -> value for every top-level `NAME = "literal"` (and annotated form) in the module."""
    return module.memoised("constants", lambda: _read_string_constants(module))


def _read_string_constants(module: Module) -> dict[str, str]:
    constants: dict[str, str] = {}
    for stmt in module.tree.body if module.tree else ():
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [getattr(stmt, "target", None)]
        value = getattr(stmt, "value", None)
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            constants.update((t.id, value.value) for t in targets if isinstance(t, ast.Name))
    return constants


def resolve_relative(module: Module, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    parts = module.name.split(".")
    base = parts if module.is_package else parts[:-1]
    base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
    return ".".join([*base, node.module] if node.module else base)


def aliases(module: Module) -> dict[str, str]:
    """Local name -> qualified name, for every import in the module (at any depth)."""
    return module.memoised("aliases", lambda: _read_aliases(module))


def _read_aliases(module: Module) -> dict[str, str]:
    table: dict[str, str] = {}
    for node in module.of_type(ast.Import, ast.ImportFrom):
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                table[alias.asname or top] = alias.name if alias.asname else top
        elif isinstance(node, ast.ImportFrom):
            source = resolve_relative(module, node)
            for alias in node.names:
                if alias.name != "*":
                    table[alias.asname or alias.name] = f"{source}.{alias.name}"
    return table


def qualified(expr: ast.expr, table: dict[str, str]) -> str | None:
    """`a.b.c` with `a` replaced by what it was imported as; None for anything but names and attributes."""
    if isinstance(expr, ast.Name):
        return table.get(expr.id, expr.id)
    if isinstance(expr, ast.Attribute):
        base = qualified(expr.value, table)
        return f"{base}.{expr.attr}" if base else None
    return None


def import_time_nodes(body: list[ast.stmt]) -> Iterator[ast.AST]:
    """Every node evaluated when the module is imported: not function bodies, but decorators and class bodies."""
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for expr in [*stmt.decorator_list, *stmt.args.defaults, *stmt.args.kw_defaults]:
                if expr is not None:
                    yield from walk_nodes(expr)
        elif isinstance(stmt, ast.ClassDef):
            for expr in [*stmt.decorator_list, *stmt.bases]:
                yield from walk_nodes(expr)
            yield from import_time_nodes(stmt.body)
        else:
            children = [c for c in ast.iter_child_nodes(stmt) if isinstance(c, ast.stmt)]
            yield stmt
            for child in ast.iter_child_nodes(stmt):
                if not isinstance(child, ast.stmt):
                    yield from walk_nodes(child)
            yield from import_time_nodes(children)


@dataclass(frozen=True)
class _Site:
    """A call, or a bare attribute decorator, with the name it calls and whether importing the module runs it."""

    node: ast.Call | ast.Attribute
    name: str
    at_import: bool


def _sites(module: Module) -> list[_Site]:
    """Every call site of the module, once: what `calls` filters for each question."""
    return module.memoised("sites", lambda: _read_sites(module))


def _read_sites(module: Module) -> list[_Site]:
    tree = module.tree
    at_import = {id(n) for n in import_time_nodes(tree.body)} if tree is not None else set()
    nodes: list[ast.Call | ast.Attribute] = [*module.of_type(ast.Call)]
    for definition in module.of_type(ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef):
        nodes += [d for d in definition.decorator_list if isinstance(d, ast.Attribute)]
    sites: list[_Site] = []
    for node in nodes:
        name = called_name(node)
        if name is not None:
            sites.append(_Site(node, name, id(node) in at_import))
    sites.sort(key=lambda site: getattr(site.node, "lineno", 0))
    return sites


def _call_from(module: Module, site: _Site, table: dict[str, str]) -> Call:
    node = site.node
    func, args, keywords = (node.func, node.args, node.keywords) if isinstance(node, ast.Call) else (node, [], [])
    receiver = qualified(func.value, table) if isinstance(func, ast.Attribute) else None
    return Call(module, node, site.name, receiver, tuple(args), {k.arg: k.value for k in keywords if k.arg})


def calls(module: Module, apis: frozenset[str] = REGISTRATION_APIS, *, at_import: bool = False) -> list[Call]:
    """Calls (and bare decorators) of `apis` in `module`; with `at_import`, only those run by importing it."""
    if module.tree is None:
        return []

    def find() -> list[Call]:
        table = aliases(module)
        found = [s for s in _sites(module) if s.name in apis and (s.at_import or not at_import)]
        return [_call_from(module, site, table) for site in found]

    return module.memoised(f"calls:{sorted(apis)}:{at_import}", find)


def all_calls(package: PluginPackage, apis: frozenset[str] = REGISTRATION_APIS) -> list[Call]:
    return [call for module in package.parsed() for call in calls(module, apis)]


def top_level_names(module: Module) -> set[str]:
    """The names the module binds when it runs: its definitions, imports and assignments, those made inside a
    module-level `if`, `try`, `with` or loop included (a class defined in each branch of a version test)."""
    names: set[str] = set()
    pending = list(module.tree.body) if module.tree else []
    while pending:
        stmt = pending.pop()
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(stmt.name)
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in stmt.names)
        elif isinstance(stmt, (ast.If, ast.Try, ast.With, ast.For, ast.While)):
            names.update(
                n.id for n in ast.walk(_header(stmt)) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
            )
            pending += [*stmt.body, *getattr(stmt, "orelse", ()), *getattr(stmt, "finalbody", ())]
            for handler in getattr(stmt, "handlers", ()):
                names.update([handler.name] if handler.name else [])
                pending += handler.body
        else:
            names.update(n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
    if "__getattr__" in names:  # PEP 562: the module provides the names it exports on first access
        names.update(str(constant.value) for constant in exports(module))
    return names


def _header(stmt: ast.stmt) -> ast.AST:
    """What a compound statement binds outside its body: a loop's target, a `with`'s `as` names."""
    if isinstance(stmt, ast.For):
        return stmt.target
    if isinstance(stmt, ast.With):
        return ast.Tuple(elts=[item.optional_vars for item in stmt.items if item.optional_vars], ctx=ast.Load())
    return ast.Pass()


def exports(module: Module) -> list[ast.Constant]:
    """The string literals of the module's `__all__` (`__all__ = [...]`, `__all__ += [...]`): names it exports,
    not names it uses."""

    def read() -> list[ast.Constant]:
        found: list[ast.Constant] = []
        for node in module.of_type(ast.Assign, ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                found += [n for n in ast.walk(node.value) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
        return found

    return module.memoised("exports", read)


def called_name(node: ast.AST) -> str | None:
    """The name a call (or a bare decorator) calls: `f` of `f(...)` and of `owner.f(...)`; None otherwise."""
    func = node.func if isinstance(node, ast.Call) else node
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def references(module: Module) -> list[str]:
    """Dotted names the module can import: its imports at any depth (with each imported name), and
    "pkg.mod:attr" / "pkg.mod" strings (import_module tables)."""
    return module.memoised("references", lambda: _read_references(module))


def _read_references(module: Module) -> list[str]:
    found: list[str] = []
    for node in module.of_type(ast.Import, ast.ImportFrom, ast.Constant):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            source = resolve_relative(module, node)
            found.append(source)
            found += [f"{source}.{alias.name}" for alias in node.names if alias.name != "*"]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            candidate = node.value.partition(":")[0]
            if candidate.replace(".", "").isidentifier():
                found.append(candidate)
    return found


def reached_modules(package: PluginPackage, start: list[str]) -> set[str]:
    """Package modules that importing `start` (and calling what it names) can import: imports at any depth,
    plus "pkg.mod:attr" / "pkg.mod" strings naming package modules (import_module tables), plus parents."""
    reached: set[str] = set()
    pending = list(start)
    while pending:
        name = pending.pop()
        module = package.module_for(name)
        if module is None or module.name in reached:
            continue
        reached.add(module.name)
        parts = module.name.split(".")
        pending += [".".join(parts[:i]) for i in range(1, len(parts))]
        pending += [name for name in references(module) if package.owns(name)]
    return {name for name in reached if name in package.modules}


def classes(package: PluginPackage) -> Iterator[tuple[Module, ast.ClassDef, list[str]]]:
    """Every class in the package with the qualified names of its bases."""
    for module in package.parsed():
        for node, bases in module.memoised("classes", partial(_read_classes, module)):
            yield module, node, bases


def _read_classes(module: Module) -> list[tuple[ast.ClassDef, list[str]]]:
    table = aliases(module)
    return [
        (node, [q for q in (qualified(b, table) for b in node.bases) if q]) for node in module.of_type(ast.ClassDef)
    ]


def class_body_names(node: ast.ClassDef) -> set[str]:
    """The names a class body binds: methods, nested classes and class attributes."""
    names: set[str] = set()
    for stmt in node.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(stmt.name)
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def function(module: Module, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    for stmt in module.tree.body if module.tree else ():
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == name:
            return stmt
    return None
