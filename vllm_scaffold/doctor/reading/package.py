"""A plugin package as doctor reads it: the project model (vllm_scaffold.project), with its modules parsed
as ASTs once."""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, cast, overload

from vllm_scaffold.doctor.reading.collector import collector_paused
from vllm_scaffold.project import EntryPoint, PluginProject
from vllm_scaffold.project.model import ProjectView
from vllm_scaffold.project.python_syntax import parse_module

DeclaredEntryPoint = EntryPoint  # the name the checks use
T = TypeVar("T")
N = TypeVar("N", bound=ast.AST)
N2 = TypeVar("N2", bound=ast.AST)
N3 = TypeVar("N3", bound=ast.AST)


@dataclass
class Module:
    name: str
    path: Path
    rel: str  # path relative to the package root, for `where`
    is_package: bool
    tree: ast.Module | None
    syntax_error: str | None = None
    lines: int = 0
    # Facts the checks derive from the tree (import aliases, call sites, ...), computed once per module
    # by vllm_scaffold.doctor.reading.source: a large plugin is walked once, not once per check.
    memo: dict[str, object] = field(default_factory=dict, repr=False, compare=False)

    def memoised(self, key: str, build: Callable[[], T]) -> T:
        """What `build` returns, computed once per module and kept under `key` (each key holds one type)."""
        if key not in self.memo:
            self.memo[key] = build()
        return cast(T, self.memo[key])

    @property
    def nodes(self) -> list[ast.AST]:
        """Every node of the tree (ast.walk order), listed once."""
        return self.memoised("nodes", lambda: walk_nodes(self.tree) if self.tree is not None else [])

    @overload
    def of_type(self, kind: type[N], /) -> list[N]: ...
    @overload
    def of_type(self, kind: type[N], other: type[N2], /) -> list[N | N2]: ...
    @overload
    def of_type(self, kind: type[N], other: type[N2], third: type[N3], /) -> list[N | N2 | N3]: ...
    @overload
    def of_type(self, *kinds: type[ast.AST]) -> list[ast.AST]: ...

    def of_type(self, *kinds: type[ast.AST]) -> list[Any]:
        """The nodes of exactly these classes (no subclasses), in walk order; each selection listed once."""
        by_type, positions = self._by_type
        if len(kinds) == 1:
            return by_type.get(kinds[0], [])

        def merged() -> list[ast.AST]:
            # each class's positions in the walk are sorted already: sorting them together merges the runs
            order: list[int] = []
            for kind in kinds:
                order += positions.get(kind, ())
            order.sort()
            nodes = self.nodes
            return [nodes[p] for p in order]

        return self.memoised("of_type:" + ",".join(kind.__name__ for kind in kinds), merged)

    @property
    def _by_type(self) -> tuple[dict[type, list[ast.AST]], dict[type, list[int]]]:
        """The nodes by class in walk order, with their positions in the walk, sorted in one pass."""

        def sort() -> tuple[dict[type, list[ast.AST]], dict[type, list[int]]]:
            found: dict[type, list[ast.AST]] = {}
            positions: dict[type, list[int]] = {}
            for position, node in enumerate(self.nodes):
                kind = node.__class__
                if kind in found:
                    found[kind].append(node)
                    positions[kind].append(position)
                else:
                    found[kind] = [node]
                    positions[kind] = [position]
            return found, positions

        return self.memoised("by_type", sort)

    def where(self, node: ast.AST | None = None) -> str:
        line = getattr(node, "lineno", None)
        return f"{self.rel}:{line}" if line else self.rel


@dataclass
class PluginPackage(ProjectView):
    project: PluginProject
    modules: dict[str, Module] = field(default_factory=dict)
    install_from: Path | None = None  # what `pip install` takes to install it (the live probe), when anything

    @property
    def installable(self) -> bool:
        return self.install_from is not None

    @classmethod
    def load(cls, root: Path) -> PluginPackage:
        from vllm_scaffold.project import read_project

        root = root.absolute()
        return cls.of(read_project(root), install_from=root)

    @classmethod
    def of(cls, project: PluginProject, install_from: Path | None = None) -> PluginPackage:
        package = cls(project, install_from=install_from)
        with collector_paused():
            for found in project.modules():
                module = _parse(found.name, found.path, project.root, found.is_package, project.requires_python)
                package.modules.setdefault(found.name, module)
        return package

    def parsed(self) -> list[Module]:
        return [m for m in self.modules.values() if m.tree is not None]

    def module_for(self, dotted: str) -> Module | None:
        """The package module that `dotted` names, or the deepest package module it lies in."""
        parts = dotted.split(".")
        while parts:
            found = self.modules.get(".".join(parts))
            if found is not None:
                return found
            parts.pop()
        return None

    def owns(self, dotted: str) -> bool:
        return dotted.split(".")[0] in self.project.packages


# Fields that never hold nodes (names, flags, the Load/Store/Del markers no check walks for).
_LEAF_FIELDS = frozenset(
    {
        "ctx",
        "id",
        "attr",
        "arg",
        "name",
        "module",
        "level",
        "kind",
        "type_comment",
        "asname",
        "is_async",
        "conversion",
        "simple",
    }
)
# List fields that may hold something other than nodes: None (`{**x}` keys, keyword-only parameters without a
# default) or identifiers. Every other list field of the grammar holds nodes only, and is taken as it is.
_MIXED_LISTS = frozenset(
    {
        (ast.Dict, "keys"),
        (ast.arguments, "kw_defaults"),
        (ast.Global, "names"),
        (ast.Nonlocal, "names"),
        (ast.MatchClass, "kwd_attrs"),
    }
)
_NODE_FIELDS: dict[type, tuple[tuple[str, bool], ...]] = {}


def walk_nodes(tree: ast.AST) -> list[ast.AST]:
    """ast.walk's nodes in ast.walk's order (breadth first), without the context markers, at a third of its
    cost: a plugin of 100,000 lines has about 700,000 nodes."""
    nodes = [tree]
    index = 0
    while index < len(nodes):
        node = nodes[index]
        index += 1
        kind = node.__class__
        fields = _NODE_FIELDS.get(kind)
        if fields is None:
            leaf = kind is ast.Constant
            fields = _NODE_FIELDS[kind] = tuple(
                (f, (kind, f) in _MIXED_LISTS) for f in kind._fields if f not in _LEAF_FIELDS and not leaf
            )
        for name, mixed in fields:
            value = getattr(node, name, None)
            if value.__class__ is list:
                if mixed:
                    nodes.extend(item for item in value if isinstance(item, ast.AST))
                else:
                    nodes.extend(value)
            elif isinstance(value, ast.AST):
                nodes.append(value)
    return nodes


def _parse(name: str, path: Path, root: Path, is_package: bool, requires_python: str | None) -> Module:
    """The module read with the grammar of the oldest Python the plugin allows, which may be newer than
    doctor's (see vllm_scaffold.project.python_syntax)."""
    source = path.read_text(encoding="utf-8", errors="replace")
    tree, problem = parse_module(source, str(path), requires_python)
    rel = path.relative_to(root).as_posix() if path.is_relative_to(root) else path.as_posix()
    return Module(name, path, rel, is_package, tree, problem, source.count("\n") + 1)
