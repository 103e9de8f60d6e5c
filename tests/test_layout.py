"""The tool's package layout: no import cycles between its modules, and no module importing another module's
private names. Imports inside functions count (they run too, only later); imports under `if TYPE_CHECKING:`
do not (they never run). An import of `a.b.c` also runs the `__init__` of every package above it that the
importer is not already inside, so those are edges too."""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

from tests.helpers import build_file_tree

TOOL = Path(__file__).resolve().parent.parent / "vllm_scaffold"


def module_names(root: Path) -> dict[str, Path]:
    """Every module of the import package at `root`, by dotted name (a package by its own name)."""
    modules = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def _runtime_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _resolve(importer: str, node: ast.ImportFrom, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = importer.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def import_graph(root: Path) -> tuple[dict[str, set[str]], list[str]]:
    """The import edges between the modules of the package at `root`, and every import of a private name
    (`module: from x import _name`, or of a private module) from another module."""
    modules = module_names(root)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    private: list[str] = []
    for importer, path in modules.items():
        is_package = path.name == "__init__.py"
        for node in _runtime_imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                source = _resolve(importer, node, is_package)
                targets = []
                for alias in node.names:
                    submodule = f"{source}.{alias.name}"
                    targets.append(submodule if submodule in modules else source)
                    if alias.name.startswith("_") and not alias.name.startswith("__") and source in modules:
                        private.append(f"{importer}: from {source} import {alias.name}")
            for target in targets:
                if target not in modules:
                    continue
                if any(part.startswith("_") and not part.startswith("__") for part in target.split(".")):
                    if not importer.startswith(target.rpartition(".")[0] + "."):
                        private.append(f"{importer}: import of the private module {target}")
                parts = target.split(".")
                for depth in range(1, len(parts) + 1):
                    above = ".".join(parts[:depth])
                    inside = importer == above or importer.startswith(above + ".")
                    if above != importer and not (inside and depth < len(parts)):
                        graph[importer].add(above)
    return graph, private


def cycle(graph: dict[str, set[str]]) -> list[str] | None:
    try:
        tuple(TopologicalSorter(graph).static_order())
    except CycleError as error:
        return list(error.args[1])
    return None


def test_the_tool_has_no_import_cycle() -> None:
    graph, _ = import_graph(TOOL)
    assert len(graph) > 50
    assert cycle(graph) is None, " -> ".join(cycle(graph) or [])


def test_no_module_imports_another_modules_private_names() -> None:
    _, private = import_graph(TOOL)
    assert private == []


def test_a_new_cycle_is_found_through_a_function_level_import(tmp_path: Path) -> None:
    build_file_tree(
        {
            "pkg/__init__.py": "",
            "pkg/core/__init__.py": "from pkg.core.model import Model\n",
            "pkg/core/model.py": "def load():\n    from pkg.cli import run\n",
            "pkg/cli.py": "from pkg.core import Model\n",
            "pkg/typed.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.cli import run\n",
            "pkg/peek.py": "from pkg.core.model import _hidden\n",
        },
        tmp_path,
    )
    graph, private = import_graph(tmp_path / "pkg")
    assert set(cycle(graph) or []) >= {"pkg.cli", "pkg.core", "pkg.core.model"}
    assert graph["pkg.typed"] == set()
    assert private == ["pkg.peek: from pkg.core.model import _hidden"]


def test_the_tools_folders_import_one_way() -> None:
    """The layers (cli -> terminal -> generate -> doctor/route -> catalog -> vllm_facts/project): no folder
    imports one that imports it back, through any module of either."""
    graph, _ = import_graph(TOOL)
    folders: dict[str, set[str]] = {}
    for importer, targets in graph.items():
        for target in targets:
            layer, other = ".".join(importer.split(".")[:2]), ".".join(target.split(".")[:2])
            if layer != other and other != TOOL.name:
                folders.setdefault(layer, set()).add(other)
    assert cycle(folders) is None, " -> ".join(cycle(folders) or [])
