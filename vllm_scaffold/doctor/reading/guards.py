"""Which code of a module runs only under a guard: `if TYPE_CHECKING:`, `try: ... except ImportError:`, or a
vLLM version condition.

A missing vLLM name under `TYPE_CHECKING` never runs; under an import guard or a version condition the plugin
has already planned for it, and what matters is what silently switches off on the installed vLLM. A branch of a
version condition that `reading/versions.py` decides the checked release does not take never runs there at all
(`untaken_branches`).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from vllm_scaffold.doctor.reading.package import Module, walk_nodes
from vllm_scaffold.doctor.reading.versions import holds_on
from vllm_scaffold.vllm_facts.syntax import is_type_checking

# Handlers that catch a failing import; a missing attribute.
IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})
ATTRIBUTE_ERRORS = frozenset({"AttributeError", "Exception", "BaseException"})


class GuardKind(StrEnum):
    """What keeps a statement from running on some vLLM; the value names it in a finding's words."""

    TYPE_CHECKING = "TYPE_CHECKING"
    IMPORT_ERROR = "import guard"
    VLLM_VERSION = "vLLM version condition"
    FEATURE_TEST = "hasattr test"


@dataclass(frozen=True)
class Guard:
    kind: GuardKind
    node: ast.Try | ast.TryStar | ast.If | ast.With  # the guarding statement

    def consequence(self, module: Module) -> str:
        """What runs instead on a vLLM where the guarded code fails, in words."""
        where = module.where(self.node)
        if isinstance(self.node, ast.Try | ast.TryStar):
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


def catches(handlers: list[ast.ExceptHandler], catching: frozenset[str]) -> bool:
    for handler in handlers:
        if handler.type is None or set(_names(handler.type)) & catching:
            return True
    return False


def is_version_condition(test: ast.expr) -> bool:
    """A condition on a version (vllm.__version__, a parsed version, is_vllm_version_...), not on Python's."""
    names = [name.lower() for name in _names(test)]
    if "version_info" in names:
        return False
    return any("version" in name for name in names)


def untaken_branches(module: Module, version: str | None) -> set[int]:
    """id() of every node in a branch of a vLLM version condition that vLLM `version` does not take (the body
    of an `if` whose test is decided False, the `else` of one decided True): that code never runs there.
    Undecided conditions leave both branches alone."""
    if not version:
        return set()

    def build() -> set[int]:
        untaken: set[int] = set()
        for node in module.of_type(ast.If):
            if not isinstance(node, ast.If) or capability_test(node.test) is not GuardKind.VLLM_VERSION:
                continue
            holds = holds_on(module, node.test, version)
            if holds is not None:
                untaken.update(id(n) for stmt in (node.orelse if holds else node.body) for n in walk_nodes(stmt))
        return untaken

    return module.memoised(f"untaken-branches:{version}", build)


def _suppresses(node: ast.With, catching: frozenset[str]) -> bool:
    for item in node.items:
        call = item.context_expr
        if isinstance(call, ast.Call) and _names(call.func)[:1] == ["suppress"]:
            if any(set(_names(arg)) & catching for arg in call.args):
                return True
    return False


def _is_feature_test(test: ast.expr) -> bool:
    return any(isinstance(n, ast.Call) and _names(n.func)[:1] in (["hasattr"], ["getattr"]) for n in walk_nodes(test))


def guards(module: Module, catching: frozenset[str] = IMPORT_ERRORS) -> dict[int, Guard]:
    """id(node) -> the innermost guard around it, for every guarded node of the module. `catching`: the
    exceptions whose handler makes a try block a guard (a failing import by default). Memoised on the module."""
    return module.memoised("guards:" + ",".join(sorted(catching)), lambda: _guards(module, catching))


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
            inner = Guard(GuardKind.IMPORT_ERROR, stmt) if catches(stmt.handlers, catching) else guard
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
            if is_type_checking(stmt.test):
                mark(stmt.body, Guard(GuardKind.TYPE_CHECKING, stmt))
                mark(stmt.orelse, guard)
            elif is_version_condition(stmt.test):
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
        if not catches(node.handlers, IMPORT_ERRORS):
            continue
        imports = [n for stmt in node.body for n in walk_nodes(stmt) if isinstance(n, ast.Import | ast.ImportFrom)]
        targets = [t for n in imports for t in _import_targets(n)]
        if not targets or len(targets) < sum(len(n.names) for n in imports):
            continue  # a relative import: whether it fails is the package's own matter
        if all((s == "vllm" or s.startswith("vllm.")) and resolves(s, name) for s, name in targets):
            for handler in node.handlers:
                dead.update(id(n) for stmt in handler.body for n in walk_nodes(stmt))
    return dead


# -- where a node runs, as the release check reads it ----------------------------------------------------------
# The release check reads guards by block (statement spans), more widely than `guards` above: any `if` whose
# test names a version or a feature probe (`hasattr`, `getattr`, `find_spec`), a call of the module's own
# capability check, a try block catching a missing attribute too, and what follows `if <test>: return`.

RELEASE_GUARD_ERRORS = IMPORT_ERRORS | ATTRIBUTE_ERRORS
_VERSION_WORDS = ("version",)  # "__version__", "is_vllm_version", "Version"
_FEATURE_WORDS = ("hasattr", "find_spec", "getattr")
# Calls that never return, as written (`pytest.skip(...)`, `sys.exit(...)`): the code after them does not run.
_LEAVING_CALLS = frozenset({("pytest", "skip"), ("pytest", "fail"), ("sys", "exit"), ("os", "_exit")})
_STATEMENT_LISTS = ("body", "orelse", "finalbody")
Span = tuple[tuple[int, int], tuple[int, int], GuardKind]  # (first position, last position, guard)


def capability_test(test: ast.expr) -> GuardKind | None:
    """VLLM_VERSION or FEATURE_TEST when the test names a version, hasattr, getattr or find_spec (in a name, an
    attribute or a string); None otherwise."""
    return _capability_in(walk_nodes(test))


def _capability_in(nodes: list[ast.AST]) -> GuardKind | None:
    for node in nodes:
        if isinstance(node, ast.Name):
            text = node.id
        elif isinstance(node, ast.Attribute):
            text = node.attr
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        else:
            continue
        if any(word in text for word in _VERSION_WORDS):
            return GuardKind.VLLM_VERSION
        if any(word in text for word in _FEATURE_WORDS):
            return GuardKind.FEATURE_TEST
    return None


def _test_guard(test: ast.expr, module: Module) -> GuardKind | None:
    """The guard an `if` with this test sets: a capability test, or a call of one of the module's capability
    checks (`if not _has_x():`)."""
    nodes = walk_nodes(test)
    kind = _capability_in(nodes)
    if kind is None and _calls_capability_check(nodes, module):
        kind = GuardKind.FEATURE_TEST
    return kind


def leaves(stmt: ast.stmt) -> bool:
    """The statement never hands control to the next one: return, raise, or a call that never returns."""
    if isinstance(stmt, ast.Return | ast.Raise):
        return True
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        func = stmt.value.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            return (func.value.id, func.attr) in _LEAVING_CALLS
        return isinstance(func, ast.Name) and func.id in {"exit", "quit"}
    return False


def _returns_unless(stmt: ast.stmt, test_guard: Callable[[ast.expr], GuardKind | None]) -> GuardKind | None:
    """`if <capability test>: ... return` (or raise, or `pytest.skip(...)`, `sys.exit(...)`): the statements
    after it run only when the test passed; their guard (`test_guard` of the test), or None for any other
    statement."""
    if isinstance(stmt, ast.If) and not stmt.orelse and leaves(stmt.body[-1]):
        return test_guard(stmt.test)
    return None


def _calls_capability_check(nodes: list[ast.AST], module: Module) -> bool:
    return any(
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and capability_check(module, node.func.id)
        for node in nodes
    )


def capability_check(module: Module, name: str) -> bool:
    """Whether the module's function `name` is a small function that tests what vLLM offers (a version,
    hasattr/getattr, find_spec, or an import under try/except) and returns the answer: `if not _has_x():
    return` guards what follows as a version test does. Asked only for names such tests call."""
    memo = module.memoised("capability-checks", dict[str, bool])
    if name not in memo:
        found = False
        for node in module.of_type(ast.FunctionDef):
            if node.name != name or len(node.body) > 8:
                continue
            inner = walk_nodes(node)
            if not any(isinstance(n, ast.Return) and n.value is not None for n in inner):
                continue
            tests = any(capability_test(n) is not None for n in inner if isinstance(n, ast.expr))
            tries = any(isinstance(n, ast.Try) and catches(n.handlers, RELEASE_GUARD_ERRORS) for n in inner)
            found = found or tests or tries
        memo[name] = found
    return memo[name]


def _spans(module: Module) -> list[Span]:
    """Every guarded run of statements: the body of `if TYPE_CHECKING:`, of a capability test and of a try block
    catching a failing import or a missing attribute, and what follows `if <capability test>: return` in the
    same block. Statements only, not expressions: a tenth of the nodes."""
    found: list[Span] = []
    tested: dict[int, GuardKind | None] = {}  # an `if` is asked about twice: for its body, for what follows

    def test_guard(test: ast.expr) -> GuardKind | None:
        if id(test) not in tested:
            tested[id(test)] = _test_guard(test, module)
        return tested[id(test)]

    def block(statements: list[ast.stmt], guard: GuardKind) -> None:
        if statements:
            first, last = statements[0], statements[-1]
            found.append(((first.lineno, first.col_offset), (last.end_lineno or 0, last.end_col_offset or 0), guard))

    def visit(statements: list[ast.stmt]) -> None:
        for position, stmt in enumerate(statements):
            after = _returns_unless(stmt, test_guard)
            if after is not None:
                block(statements[position + 1 :], after)  # `if not hasattr(...): return` guards what follows
            if isinstance(stmt, ast.If):
                if is_type_checking(stmt.test):
                    block(stmt.body, GuardKind.TYPE_CHECKING)
                elif (test := test_guard(stmt.test)) is not None:
                    block(stmt.body, test)
                    block(stmt.orelse, test)
            elif isinstance(stmt, ast.Try) and catches(stmt.handlers, RELEASE_GUARD_ERRORS):
                block(stmt.body, GuardKind.IMPORT_ERROR)
            for field in _STATEMENT_LISTS:
                inner = getattr(stmt, field, None)
                if inner:
                    visit(inner)
            for handler in getattr(stmt, "handlers", ()):
                visit(handler.body)
            for case in getattr(stmt, "cases", ()):
                visit(case.body)

    if module.tree is not None:
        visit(module.tree.body)
    return found


def guard_at(module: Module, node: ast.AST) -> GuardKind | None:
    """The guard `node` runs under as the release check reads it: TYPE_CHECKING inside any `if TYPE_CHECKING:`
    body, else the guard of a guarded block around it, else None."""
    start = (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
    end = (getattr(node, "end_lineno", 0) or 0, getattr(node, "end_col_offset", 0) or 0)
    guard = None
    for first, last, kind in module.memoised("release-blocks", lambda: _spans(module)):
        if first <= start and end <= last:
            if kind is GuardKind.TYPE_CHECKING:
                return kind
            guard = kind
    return guard
