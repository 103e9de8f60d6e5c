"""Which vLLM general plugin of a project carries the registrations of the components `add` puts in it.

Components register through `<package>.vllm_plugin:register` (COMPONENT_REGISTRATIONS). vLLM calls a
general plugin once per process through a `vllm.general_plugins` entry point. A package made by `new`
declares `<package> = "<package>.vllm_plugin:register"`. A hand-written project may already declare a
general plugin of its own; then the registrations go through it when it is a `register()`-style function
of the project (one plugin per project, so a VLLM_PLUGINS allowlist naming it keeps working): the call
is added at the end of that function when nothing can skip it, and otherwise printed for the author to
place. A target that is not such a function gets a second plugin next to it, and `add` says why.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

from vllm_scaffold.catalog import entry_point_group
from vllm_scaffold.project import PLUGIN_MODULE, Project

PLUGIN_GROUP = entry_point_group("general-plugin")


@dataclass
class Wiring:
    """What `add` does about the general plugin, and what it tells the user."""

    through: str | None = None  # the existing entry point that calls <package>.vllm_plugin:register
    new_entry_point: tuple[str, str] | None = None  # (name, target) to declare
    edit: tuple[str, str] | None = None  # (relpath, new content) of a hand-written plugin module
    notes: list[str] = field(default_factory=list)


def plan(project: Project) -> Wiring:
    """The wiring for one more component of `project`."""
    ours = f"{project.package}.{PLUGIN_MODULE}:register"
    declared = {ep.name: ep.value for ep in project.entry_points_in(PLUGIN_GROUP)}
    through = next((name for name, target in declared.items() if target == ours), None)
    if through is not None:
        return Wiring(through=through, notes=[f"registration: through the general plugin '{through}' ({ours})"])
    for name, target in declared.items():
        function = _project_function(project, target)
        if function is None:
            continue
        relpath, node, source = function
        where = f"the project's general plugin '{name}' ({target})"
        if _calls_plugin_module(node, project.package):
            return Wiring(through=name, notes=[f"registration: through {where}, which calls {ours}"])
        call = _call_lines(project.package, node)
        if project.has_plugin_module() or not _can_append(node):
            line = f"from {project.package} import {PLUGIN_MODULE}; {PLUGIN_MODULE}.register()"
            return Wiring(through=name, notes=[f"registration: through {where}; add this line at its end: {line}"])
        lines = source.splitlines(keepends=True)
        edited = "".join(lines[: node.end_lineno] + call + lines[node.end_lineno :])
        note = f"registration: through {where}, which now calls {ours}"
        return Wiring(through=name, edit=(relpath, edited), notes=[note])
    name = project.package if project.package not in declared else f"{project.package}_components"
    notes = [f"registration: through a new general plugin '{name}' ({ours})"]
    if declared:
        existing = ", ".join(f"'{n}' ({t})" for n, t in declared.items())
        notes.append(
            f"a second general plugin, because {existing} is not a function of this project that vLLM can call "
            f"with no arguments; if VLLM_PLUGINS is set, name both"
        )
    return Wiring(new_entry_point=(name, ours), notes=notes)


def _project_function(project: Project, target: str) -> tuple[str, ast.FunctionDef, str] | None:
    """The top-level function `target` ("pkg.mod:func") names in the project's own package, if callable bare."""
    module, _, attribute = target.partition(":")
    parts = module.split(".")
    if parts[0] != project.package or not attribute.isidentifier():
        return None
    base = Path(project.package_dir, *parts[1:])
    candidates = [base / "__init__.py"] if len(parts) == 1 else [base.with_suffix(".py"), base / "__init__.py"]
    relpath = next((path.as_posix() for path in candidates if (project.root / path).is_file()), None)
    if relpath is None:
        return None
    source = (project.root / relpath).read_text(encoding="utf-8")
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == attribute and _no_required_arguments(node):
            return relpath, node, source
    return None


def _no_required_arguments(node: ast.FunctionDef) -> bool:
    args = node.args
    positional = args.posonlyargs + args.args
    return len(args.defaults) == len(positional) and all(d is not None for d in args.kw_defaults)


def _calls_plugin_module(node: ast.FunctionDef, package: str) -> bool:
    """Whether the function already calls `<package>.vllm_plugin.register` (as `vllm_plugin.register()`)."""
    source = ast.unparse(node)
    return f"{PLUGIN_MODULE}.register()" in source or f"{package}.{PLUGIN_MODULE}" in source


def _can_append(node: ast.FunctionDef) -> bool:
    """A call appended to the body runs every time: no return, yield or raise can skip it."""
    body_on_own_lines = node.body[0].lineno > node.lineno
    exits = (ast.Return, ast.Yield, ast.YieldFrom, ast.Raise)
    return body_on_own_lines and not any(isinstance(n, exits) for n in ast.walk(node))


def _call_lines(package: str, node: ast.FunctionDef) -> list[str]:
    indent = " " * node.body[0].col_offset
    return [
        f"{indent}# Components added with vllm-scaffold register through {package}.{PLUGIN_MODULE}.\n",
        f"{indent}from {package} import {PLUGIN_MODULE}\n",
        "\n",
        f"{indent}{PLUGIN_MODULE}.register()\n",
    ]
