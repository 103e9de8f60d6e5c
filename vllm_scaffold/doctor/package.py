"""A plugin package as doctor reads it: pyproject, entry points, manifest, and its modules parsed as ASTs."""

from __future__ import annotations

import ast
import tomllib
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from vllm_scaffold.errors import ScaffoldError

# Directories that never hold the package's importable source.
_SKIP_DIRS = {"tests", "test", "docs", "build", "dist", "examples", "benchmarks", "scripts", "node_modules"}


@dataclass(frozen=True)
class DeclaredEntryPoint:
    group: str
    name: str
    value: str  # "module:attr" or "module"

    @property
    def module(self) -> str:
        return self.value.partition(":")[0].strip()

    @property
    def attr(self) -> str | None:
        attr = self.value.partition(":")[2].strip()
        return attr.split("[")[0].strip() or None

    @property
    def where(self) -> str:
        return f'entry point [{self.group}] {self.name} = "{self.value}"'


@dataclass
class Module:
    name: str
    path: Path
    rel: str  # path relative to the package root, for `where`
    is_package: bool
    tree: ast.Module | None
    syntax_error: str | None = None

    def where(self, node: ast.AST | None = None) -> str:
        line = getattr(node, "lineno", None)
        return f"{self.rel}:{line}" if line else self.rel


@dataclass
class PluginPackage:
    root: Path
    pyproject: dict
    modules: dict[str, Module] = field(default_factory=dict)

    @classmethod
    def load(cls, root: Path) -> PluginPackage:
        root = root.absolute()
        path = root / "pyproject.toml"
        if not path.is_file():
            raise ScaffoldError(f"no pyproject.toml in {root}", "pass the directory of a plugin package")
        try:
            pyproject = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as error:
            raise ScaffoldError(f"{path} does not parse ({error})", "fix the TOML syntax") from None
        package = cls(root=root, pyproject=pyproject)
        package.modules = _collect_modules(root)
        return package

    @property
    def dist_name(self) -> str:
        return str(self.pyproject.get("project", {}).get("name", self.root.name))

    @property
    def manifest(self) -> dict:
        return self.pyproject.get("tool", {}).get("vllm-scaffold", {})

    @cached_property
    def entry_points(self) -> list[DeclaredEntryPoint]:
        groups = self.pyproject.get("project", {}).get("entry-points", {})
        return [
            DeclaredEntryPoint(group, name, str(value))
            for group, table in groups.items()
            if isinstance(table, dict)
            for name, value in table.items()
        ]

    def entry_points_in(self, group: str) -> list[DeclaredEntryPoint]:
        return [ep for ep in self.entry_points if ep.group == group]

    @property
    def dependencies(self) -> list[str]:
        return [str(d) for d in self.pyproject.get("project", {}).get("dependencies", [])]

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
        return dotted.split(".")[0] in {name.split(".")[0] for name in self.modules}


def _source_root(root: Path) -> Path:
    src = root / "src"
    return src if src.is_dir() else root


def _collect_modules(root: Path) -> dict[str, Module]:
    base = _source_root(root)
    modules: dict[str, Module] = {}
    for path in sorted(base.rglob("*.py")):
        relative = path.relative_to(base)
        if any(part in _SKIP_DIRS or part.startswith(".") for part in relative.parts[:-1]):
            continue
        if base == root and len(relative.parts) == 1:
            continue  # setup.py, noxfile.py and the like beside pyproject.toml are not the package
        parents = (base.joinpath(*relative.parts[:i]) for i in range(1, len(relative.parts)))
        if not all((parent / "__init__.py").is_file() for parent in parents):
            continue
        is_package = path.name == "__init__.py"
        parts = relative.parts[:-1] if is_package else (*relative.parts[:-1], path.stem)
        name = ".".join(parts)
        source = path.read_text(encoding="utf-8", errors="replace")
        try:
            tree: ast.Module | None = ast.parse(source, filename=str(path))
            problem = None
        except SyntaxError as error:
            tree, problem = None, f"line {error.lineno}: {error.msg}"
        rel = path.relative_to(root).as_posix()
        modules[name] = Module(name, path, rel, is_package, tree, problem)
    return modules
