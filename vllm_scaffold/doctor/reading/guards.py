"""Which code of a module runs only under a guard: `if TYPE_CHECKING:`, `try: ... except ImportError:`, or a
vLLM version condition.

A missing vLLM name under `TYPE_CHECKING` never runs; under an import guard or a version condition the plugin
has already planned for it, and what matters is what silently switches off on the installed vLLM.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from vllm_scaffold.doctor.reading.package import Module, walk_nodes

# Handlers that catch a failing import; a missing attribute.
IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})
ATTRIBUTE_ERRORS = frozenset({"AttributeError", "Exception", "BaseException"})


class GuardKind(StrEnum):
    TYPE_CHECKING = "TYPE_CHECKING"
    IMPORT_ERROR = "import guard"
    VLLM_VERSION = "vLLM version condition"
    FEATURE_TEST = "hasattr test"


@dataclass(frozen=True)
class Guard:
    kind: GuardKind
    node: ast.Try | ast.If | ast.With  # the guarding statement

    def consequence(self, module: Module) -> str:
        """What runs instead on a vLLM where the guarded code fails, in words."""
        where = module.where(self.node)
        if isinstance(self.node, ast.Try):
            handler = self.node.handlers[0] if self.node.handlers else None
            instead = f"the except branch at {module.where(handler)} runs instead" if handler else "it is skipped"
            body = _describe(self.node.body)
            return f"the rest of the try block at {where} ({body}) silently switches off and {instead}"
        if isinstance(self.node, ast.With):
            return f"the rest of the block at {where} ({_describe(self.node.body)}) silently switches off"
        if self.kind is GuardKind.FEATURE_TEST:
            return f"the branch under the hasattr test at {where} does not run"
        return f"the branch of the version condition at {where} that needs it is for another vLLM"


def _describe(body: list[ast.stmt]) -> str:
    shown = [ast.unparse(stmt).splitlines()[0] for stmt in body[:3]]
    shown = [text if len(text) <= 70 else text[:67] + "..." for text in shown]
    return "; ".join(shown) + ("; ..." if len(body) > 3 else "")


def _names(expr: ast.expr) -> list[str]:
    return [
        n.id if isinstance(n, ast.Name) else n.attr for n in walk_nodes(expr) if isinstance(n, ast.Name | ast.Attribute)
    ]


def _catches(handlers: list[ast.ExceptHandler], catching: frozenset[str]) -> bool:
    for handler in handlers:
        if handler.type is None or set(_names(handler.type)) & catching:
            return True
    return False


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _is_version_condition(test: ast.expr) -> bool:
    """A condition on a version (vllm.__version__, a parsed version, is_vllm_version_...), not on Python's."""
    names = [name.lower() for name in _names(test)]
    if "version_info" in names:
        return False
    return any("version" in name for name in names)


def _suppresses(node: ast.With, catching: frozenset[str]) -> bool:
    for item in node.items:
        call = item.context_expr
        if isinstance(call, ast.Call) and _names(call.func)[:1] == ["suppress"]:
            if any(set(_names(arg)) & catching for arg in call.args):
                return True
    return False


def _is_feature_test(test: ast.expr) -> bool:
    return any(
        n.__class__ is ast.Call and _names(n.func)[:1] in (["hasattr"], ["getattr"])  # type: ignore[attr-defined]
        for n in walk_nodes(test)
    )


def guards(module: Module, catching: frozenset[str] = IMPORT_ERRORS) -> dict[int, Guard]:
    """id(node) -> the innermost guard around it, for every guarded node of the module. `catching`: the
    exceptions whose handler makes a try block a guard (a failing import by default). Memoised on the module."""
    key = "guards:" + ",".join(sorted(catching))
    if key not in module.memo:
        module.memo[key] = _guards(module, catching)
    return module.memo[key]  # type: ignore[return-value]


# The fields of a statement that hold statements: each is visited with its own guard.
_BODIES = frozenset({"body", "orelse", "finalbody", "handlers"})


def _guards(module: Module, catching: frozenset[str]) -> dict[int, Guard]:
    found: dict[int, Guard] = {}

    def mark(nodes: list[ast.stmt], guard: Guard | None) -> None:
        for stmt in nodes:
            visit(stmt, guard)

    def cover(node: ast.AST, guard: Guard) -> None:
        for inner in walk_nodes(node):
            found[id(inner)] = guard

    def visit(stmt: ast.stmt, guard: Guard | None) -> None:
        if guard is not None:  # the statement's own parts; the statements in its bodies are visited below
            found[id(stmt)] = guard
            for name in stmt._fields:
                value = getattr(stmt, name, None)
                if name in _BODIES or value is None:
                    continue
                for item in value if isinstance(value, list) else [value]:
                    if isinstance(item, ast.AST):
                        cover(item, guard)
        if isinstance(stmt, ast.Try | ast.TryStar):
            inner = Guard(GuardKind.IMPORT_ERROR, stmt) if _catches(stmt.handlers, catching) else guard
            mark(stmt.body, inner)
            for handler in stmt.handlers:
                if guard is not None:
                    found[id(handler)] = guard
                    if handler.type is not None:
                        cover(handler.type, guard)
                mark(handler.body, guard)
            mark(stmt.orelse, inner)
            mark(stmt.finalbody, guard)
        elif isinstance(stmt, ast.If):
            if _is_type_checking(stmt.test):
                mark(stmt.body, Guard(GuardKind.TYPE_CHECKING, stmt))
                mark(stmt.orelse, guard)
            elif _is_version_condition(stmt.test):
                mark(stmt.body, Guard(GuardKind.VLLM_VERSION, stmt))
                mark(stmt.orelse, Guard(GuardKind.VLLM_VERSION, stmt))
            elif _is_feature_test(stmt.test):
                cover(stmt.test, Guard(GuardKind.FEATURE_TEST, stmt))
                mark(stmt.body, Guard(GuardKind.FEATURE_TEST, stmt))
                mark(stmt.orelse, guard)
            else:
                mark(stmt.body, guard)
                mark(stmt.orelse, guard)
        elif isinstance(stmt, ast.With) and _suppresses(stmt, catching):
            mark(stmt.body, Guard(GuardKind.IMPORT_ERROR, stmt))
        else:
            for field in ("body", "orelse", "finalbody"):
                children = getattr(stmt, field, None)
                if isinstance(children, list):
                    mark([c for c in children if isinstance(c, ast.stmt)], guard)

    if module.tree is not None:
        mark(module.tree.body, None)
    return found


def _import_targets(node: ast.Import | ast.ImportFrom) -> list[tuple[str, str | None]]:
    if isinstance(node, ast.Import):
        return [(alias.name, None) for alias in node.names]
    if node.level or not node.module:
        return []
    return [(node.module, alias.name) for alias in node.names]


def dead_fallbacks(module: Module, resolves: Callable[[str, str | None], bool]) -> set[int]:
    """id() of every node in the `except ImportError:` branch of a try block whose own imports are all vLLM
    names that `resolves` (source, name) finds: on that vLLM the try block succeeds and the fallback never runs
    (`try: from vllm.new import X` / `except ImportError: from vllm.old import X`)."""
    dead: set[int] = set()
    for node in module.of_type(ast.Try):
        if not _catches(node.handlers, IMPORT_ERRORS):  # type: ignore[attr-defined]
            continue
        imports = [n for stmt in node.body for n in walk_nodes(stmt) if isinstance(n, ast.Import | ast.ImportFrom)]  # type: ignore[attr-defined]
        targets = [t for n in imports for t in _import_targets(n)]
        if not targets or len(targets) < sum(len(n.names) for n in imports):
            continue  # a relative import: whether it fails is the package's own matter
        if all((s == "vllm" or s.startswith("vllm.")) and resolves(s, name) for s, name in targets):
            for handler in node.handlers:  # type: ignore[attr-defined]
                dead.update(id(n) for stmt in handler.body for n in walk_nodes(stmt))
    return dead


# The conditions, for readers that walk statements themselves (vllm_scaffold.doctor.proof.loaded).
is_type_checking = _is_type_checking
is_version_condition = _is_version_condition
