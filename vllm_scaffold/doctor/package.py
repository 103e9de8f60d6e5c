"""A plugin package as doctor reads it: the project model (vllm_scaffold.project), with its modules parsed
as ASTs once."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

from vllm_scaffold.project import EntryPoint, PluginProject
from vllm_scaffold.project.model import Requirement

DeclaredEntryPoint = EntryPoint  # the name the checks use


@dataclass
class Module:
    name: str
    path: Path
    rel: str  # path relative to the package root, for `where`
    is_package: bool
    tree: ast.Module | None
    syntax_error: str | None = None
    lines: int = 0

    def where(self, node: ast.AST | None = None) -> str:
        line = getattr(node, "lineno", None)
        return f"{self.rel}:{line}" if line else self.rel


@dataclass
class PluginPackage:
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
        for found in project.modules():
            package.modules.setdefault(found.name, _parse(found.name, found.path, project.root, found.is_package))
        return package

    @property
    def root(self) -> Path:
        return self.project.root

    @property
    def pyproject(self) -> dict:
        return self.project.pyproject

    @property
    def dist_name(self) -> str:
        return self.project.name

    @property
    def manifest(self) -> dict:
        return self.project.manifest

    @property
    def entry_points(self) -> list[EntryPoint]:
        return self.project.entry_points

    def entry_points_in(self, group: str) -> list[EntryPoint]:
        return self.project.entry_points_in(group)

    @property
    def requirements(self) -> list[Requirement]:
        return self.project.requirements

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


def _parse(name: str, path: Path, root: Path, is_package: bool) -> Module:
    source = path.read_text(encoding="utf-8", errors="replace")
    try:
        tree: ast.Module | None = ast.parse(source, filename=str(path))
        problem = None
    except SyntaxError as error:
        tree, problem = None, f"line {error.lineno}: {error.msg}"
    rel = path.relative_to(root).as_posix() if path.is_relative_to(root) else path.as_posix()
    return Module(name, path, rel, is_package, tree, problem, source.count("\n") + 1)
