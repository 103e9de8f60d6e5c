"""The nodes of a plugin module the release checks read, each with the guard it runs under, and the names they
are read through: annotations are skipped (never evaluated), imports made only under `if TYPE_CHECKING:` bind
nothing at run time."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from vllm_scaffold.doctor.reading.guards import GuardKind, guard_at
from vllm_scaffold.doctor.reading.package import Module, walk_nodes
from vllm_scaffold.doctor.reading.source import aliases


class Place:
    """A node of a module, with the guard it runs under (None when it runs unguarded), found from the module's
    guarded blocks when first asked."""

    __slots__ = ("_guard", "_known", "module", "node")

    def __init__(self, module: Module, node: ast.AST) -> None:
        self.module = module
        self.node = node
        self._guard: GuardKind | None = None
        self._known = False

    @classmethod
    def unguarded(cls, module: Module, node: ast.AST) -> Place:
        """A place whose guard does not matter to its finding (a class, a method, a route)."""
        place = cls(module, node)
        place._known = True
        return place

    @property
    def guard(self) -> GuardKind | None:
        if not self._known:
            self._guard, self._known = guard_at(self.module, self.node), True
        return self._guard

    @property
    def type_checking(self) -> bool:
        """Under `if TYPE_CHECKING:`: the code never runs."""
        return self.guard is GuardKind.TYPE_CHECKING

    @property
    def where(self) -> str:
        return self.module.where(self.node)


def in_annotations(module: Module) -> set[int]:
    """id() of every node inside an annotation: never evaluated under `from __future__ import annotations`,
    and only type checkers read them."""

    def collect() -> set[int]:
        found: set[int] = set()
        for node in module.of_type(ast.arg, ast.AnnAssign):
            if node.annotation is not None:
                found.update(id(n) for n in walk_nodes(node.annotation))
        for function in module.of_type(ast.FunctionDef, ast.AsyncFunctionDef):
            if function.returns is not None:
                found.update(id(n) for n in walk_nodes(function.returns))
        return found

    return module.memoised("release-annotations", collect)


def walk(module: Module, *kinds: type[ast.AST]) -> Iterator[Place]:
    """The module's nodes of `kinds` outside annotations, each with the guard it runs under (found when asked)."""
    skipped = in_annotations(module)
    for kind in kinds:
        for node in module.of_type(kind):
            if id(node) not in skipped:
                yield Place(module, node)


def runtime_aliases(module: Module) -> dict[str, str]:
    """The module's import table, without names imported only under `if TYPE_CHECKING:`."""
    table = aliases(module)
    checking_only: set[str] = set()
    runtime: set[str] = set()
    for place in walk(module, ast.Import, ast.ImportFrom):
        if isinstance(place.node, ast.Import | ast.ImportFrom):
            bound = {(a.asname or a.name).split(".")[0] for a in place.node.names}
            (checking_only if place.type_checking else runtime).update(bound)
    return {k: v for k, v in table.items() if k not in checking_only - runtime}


def head(node: ast.expr) -> ast.expr:
    """The expression an attribute chain starts from: `a` of `a.b.c`."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return node


def is_dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")  # every module and class has __dict__, __name__, ...
