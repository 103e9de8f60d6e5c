"""Two versions of one vLLM module compared per symbol, by syntax tree: what a fork added, changed or removed.

A module's symbols are its top-level functions, classes and the methods of those classes, the names its
top-level assignments bind (values), and its other top-level statements (code run at import: a registration
call, a setting). Each is compared by its syntax tree without positions and without docstrings, so
formatting, comments and docstrings never count as a change. Imports are not symbols: they only bind names
that the symbols using them show. `if`/`try`/`with` blocks at the top level are read through (they run at
import); `if TYPE_CHECKING:` blocks are not (they never run).

A class is one symbol for its "shell" (bases, decorators, keywords and the statements of its body that are
not methods: class attributes, enum members, dataclass fields) plus one per method. A class the fork added
or removed is one symbol; its methods come with it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from vllm_scaffold.vllm_facts.syntax import runtime_statements

FUNCTION = "function"
CLASS = "class"
METHOD = "method"
VALUE = "value"
CODE = "code"

ADDED = "added"
CHANGED = "changed"
REMOVED = "removed"


@dataclass(frozen=True)
class Definition:
    """One symbol of a module: `key` is its qualified name inside the module (`Class.method`, `NAME`) or, for
    code run at import, the statement's head (`KVConnectorFactory.register_connector('X')`)."""

    key: str
    kind: str
    nodes: tuple[ast.AST, ...]  # the statements (several when a name is bound in several branches)
    dump: str  # the normalised syntax tree: equal dumps, equal symbols

    @property
    def node(self) -> ast.AST:
        return self.nodes[0]


@dataclass(frozen=True)
class Change:
    """A symbol of `module` the fork `change`d; `fork` and `base` are its definitions (None where absent)."""

    module: str
    key: str
    kind: str
    change: str
    fork: Definition | None
    base: Definition | None

    @property
    def symbol(self) -> str:
        """The dotted path: `vllm.mod.Class.method`; for code run at import, `vllm.mod[statement]`."""
        return f"{self.module}[{self.key}]" if self.kind == CODE else f"{self.module}.{self.key}"


def module_name(path: str) -> str:
    """`vllm/a/b.py` -> `vllm.a.b`; `vllm/a/__init__.py` -> `vllm.a`."""
    parts = path[: -len(".py")].split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except SyntaxError:
        return None


def definitions(tree: ast.Module) -> dict[str, Definition]:
    """Every symbol of a module, by key, in source order."""
    found: dict[str, list[tuple[str, ast.AST]]] = {}
    for stmt in runtime_statements(_without_docstring(tree.body)):
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            found.setdefault(stmt.name, []).append((FUNCTION, stmt))
        elif isinstance(stmt, ast.ClassDef):
            found.setdefault(stmt.name, []).append((CLASS, stmt))
            for member in runtime_statements(stmt.body):
                if isinstance(member, ast.FunctionDef | ast.AsyncFunctionDef):
                    found.setdefault(f"{stmt.name}.{member.name}", []).append((METHOD, member))
        elif isinstance(stmt, ast.Import | ast.ImportFrom):
            continue
        elif names := _bound_names(stmt):
            for name in names:
                found.setdefault(name, []).append((VALUE, stmt))
        else:
            found.setdefault(statement_head(stmt), []).append((CODE, stmt))
    return {
        key: Definition(key, entries[-1][0], tuple(node for _, node in entries), _dump(entries))
        for key, entries in found.items()
    }


def compare(module: str, base: ast.Module | None, fork: ast.Module | None) -> list[Change]:
    """What the fork's version of `module` added, changed and removed against the base's (None: the module
    is absent from that side)."""
    base_defs = definitions(base) if base is not None else {}
    fork_defs = definitions(fork) if fork is not None else {}
    changes: list[Change] = []
    for key, definition in fork_defs.items():
        if _inside_new_or_removed_class(key, fork_defs, base_defs):
            continue
        if key not in base_defs:
            changes.append(Change(module, key, definition.kind, ADDED, definition, None))
        elif base_defs[key].dump != definition.dump:
            changes.append(Change(module, key, definition.kind, CHANGED, definition, base_defs[key]))
    for key, definition in base_defs.items():
        if key not in fork_defs and not _inside_new_or_removed_class(key, base_defs, fork_defs):
            changes.append(Change(module, key, definition.kind, REMOVED, None, definition))
    return changes


def statement_head(stmt: ast.stmt) -> str:
    """How a top-level statement that binds no name is named: a call by its callee and first argument, an
    attribute assignment by its target, anything else by its first line."""
    call = stmt.value if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) else None
    if call is not None:
        first = ast.unparse(call.args[0]) if call.args else ""
        return f"{ast.unparse(call.func)}({first})"
    if isinstance(stmt, ast.Assign | ast.AugAssign | ast.AnnAssign):
        target = stmt.targets[0] if isinstance(stmt, ast.Assign) else stmt.target
        return ast.unparse(target)
    return ast.unparse(stmt).splitlines()[0][:80]


def class_shell(node: ast.ClassDef) -> ast.ClassDef:
    """The class without its methods' bodies: what the class itself declares."""
    body = [
        stmt for stmt in _without_docstring(node.body) if not isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef)
    ]
    return ast.ClassDef(
        name=node.name,
        bases=node.bases,
        keywords=node.keywords,
        body=body or [ast.Pass()],
        decorator_list=node.decorator_list,
        type_params=getattr(node, "type_params", []),
    )


def import_time_names(tree: ast.Module) -> set[str]:
    """The names a module reads while it is imported: in top-level statements, class bodies, decorators and
    default values, and in the bodies of its own functions that it calls then (`register_all()` at the end
    of the module, and what those call); not in other function bodies (those run later)."""
    read: set[str] = set()
    called: set[str] = set()
    functions = {
        stmt.name: stmt
        for stmt in runtime_statements(tree.body)
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef)
    }

    def visit(node: ast.AST, names: set[str]) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            decorators = getattr(node, "decorator_list", [])
            for part in [*decorators, *node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]:
                visit(part, names)
            return
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            called.add(node.func.id)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            names.add(node.id)
        for child in ast.iter_child_nodes(node):
            visit(child, names)

    for stmt in runtime_statements(tree.body):
        if not isinstance(stmt, ast.Import | ast.ImportFrom):
            visit(stmt, read)
    followed: set[str] = set()
    while pending := (called & set(functions)) - followed:
        for name in sorted(pending):
            followed.add(name)
            function = functions[name]
            body: set[str] = set()
            for stmt in function.body:
                visit(stmt, body)
            read |= body - _local_names(function)
    return read


def _local_names(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The names a function binds for itself (parameters, assignments not declared global)."""
    arguments = function.args
    names = {a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]}
    names |= {a.arg for a in (arguments.vararg, arguments.kwarg) if a is not None}
    declared: set[str] = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Global | ast.Nonlocal):
            declared.update(node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names - declared


def _bound_names(stmt: ast.stmt) -> list[str]:
    if isinstance(stmt, ast.Assign):
        return [n.id for target in stmt.targets for n in ast.walk(target) if isinstance(n, ast.Name)]
    if isinstance(stmt, ast.AnnAssign | ast.AugAssign) and isinstance(stmt.target, ast.Name):
        return [stmt.target.id]
    return []


def _inside_new_or_removed_class(key: str, this: dict[str, Definition], other: dict[str, Definition]) -> bool:
    """A method of a class that only one side has: it comes with the class."""
    owner = key.partition(".")[0]
    return "." in key and this.get(owner) is not None and this[owner].kind == CLASS and owner not in other


def _without_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        if isinstance(body[0].value.value, str):
            return body[1:]
    return body


def _normalised(node: ast.AST) -> ast.AST:
    if isinstance(node, ast.ClassDef):
        return class_shell(node)
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        copy = type(node)(**{name: getattr(node, name) for name in node._fields})
        copy.body = _strip_nested_docstrings(_without_docstring(node.body)) or [ast.Pass()]
        return copy
    return node


def _strip_nested_docstrings(body: list[ast.stmt]) -> list[ast.stmt]:
    out = []
    for stmt in body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            copy = type(stmt)(**{name: getattr(stmt, name) for name in stmt._fields})
            copy.body = _strip_nested_docstrings(_without_docstring(stmt.body)) or [ast.Pass()]
            out.append(copy)
        else:
            out.append(stmt)
    return out


def _dump(entries: list[tuple[str, ast.AST]]) -> str:
    return "\n".join(ast.dump(_normalised(node), annotate_fields=False) for _, node in entries)
