"""The project `add` extends: the model's reading of it, plus its pyproject as a tomlkit document to edit."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import tomlkit
from tomlkit.exceptions import ParseError
from tomlkit.toml_document import TOMLDocument

from vllm_scaffold.errors import ScaffoldError
from vllm_scaffold.project.model import MANIFEST_TABLE, PluginProject, ProjectView
from vllm_scaffold.project.source_tree import read_project

PLUGIN_MODULE = "vllm_plugin"


@dataclass
class Project(ProjectView):
    project: PluginProject
    doc: TOMLDocument
    package: str
    package_dir: str  # relative to root, posix: "src/pkg" or "pkg"

    @classmethod
    def load(cls, root: Path) -> Project:
        pyproject = root / "pyproject.toml"
        if not pyproject.is_file():
            raise ScaffoldError(
                f"no pyproject.toml in {root}",
                "run 'vllm-scaffold add' inside a plugin package, pass --project DIR, or start one with "
                "'vllm-scaffold new'",
            )
        try:
            doc = tomlkit.parse(pyproject.read_text(encoding="utf-8"))
        except ParseError as error:
            raise ScaffoldError(
                f"{pyproject} does not parse ({error})", "fix the TOML syntax, then run the command again"
            ) from None
        project_table = doc.get("project")
        if not isinstance(project_table, dict) or "name" not in project_table:
            raise ScaffoldError(
                f"{pyproject} has no [project] table with a name", "vllm-scaffold adds to PEP 621 projects"
            )
        model = read_project(root)
        package, package_dir = _choose_package(model)
        return cls(project=model, doc=doc, package=package, package_dir=package_dir)

    def components(self) -> list[dict]:
        return [dict(component) for component in self.manifest.get("components", [])]

    def has_plugin_module(self) -> bool:
        return (self.root / self.package_dir / f"{PLUGIN_MODULE}.py").is_file()


def _choose_package(model: PluginProject) -> tuple[str, str]:
    """The import package components go into: the manifest's `package`, else the one named like the
    distribution, else the only one there is."""
    declared = model.manifest.get("package")
    by_name = {name: path for name, path in model.packages.items() if path.is_dir() and name != "tests"}
    wanted = declared or re.sub(r"[-.]+", "_", model.name).lower()
    if wanted in by_name:
        chosen = wanted
    elif declared is None and len(by_name) == 1:
        chosen = next(iter(by_name))
    else:
        found = ", ".join(sorted(by_name)) or "none"
        raise ScaffoldError(
            f"cannot tell which import package of {model.root} to add to (found: {found})",
            f'set package = "NAME" under [tool.{MANIFEST_TABLE}] in pyproject.toml',
        )
    return chosen, by_name[chosen].relative_to(model.root).as_posix()
