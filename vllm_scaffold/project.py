"""An existing PEP 621 project that `add` extends: its pyproject, its import package and what it declares."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import tomlkit
from tomlkit.exceptions import ParseError
from tomlkit.toml_document import TOMLDocument

from vllm_scaffold.errors import ScaffoldError

MANIFEST_TABLE = "vllm-scaffold"
PLUGIN_MODULE = "vllm_plugin"


@dataclass
class Project:
    root: Path
    text: str
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
        text = pyproject.read_text(encoding="utf-8")
        try:
            doc = tomlkit.parse(text)
        except ParseError as error:
            raise ScaffoldError(
                f"{pyproject} does not parse ({error})", "fix the TOML syntax, then run the command again"
            ) from None
        project_table = doc.get("project")
        if not isinstance(project_table, dict) or "name" not in project_table:
            raise ScaffoldError(
                f"{pyproject} has no [project] table with a name", "vllm-scaffold adds to PEP 621 projects"
            )
        package, package_dir = _find_package(root, doc, str(project_table["name"]))
        return cls(root=root, text=text, doc=doc, package=package, package_dir=package_dir)

    @property
    def dist_name(self) -> str:
        return str(self.doc["project"]["name"])  # type: ignore[index]

    @property
    def manifest(self) -> dict:
        tool = self.doc.get("tool", {})
        return tool.get(MANIFEST_TABLE, {}) if isinstance(tool, dict) else {}

    def entry_points(self) -> dict[str, dict[str, str]]:
        groups = self.doc["project"].get("entry-points", {})  # type: ignore[union-attr]
        return {str(group): {str(k): str(v) for k, v in table.items()} for group, table in groups.items()}

    def components(self) -> list[dict]:
        return [dict(component) for component in self.manifest.get("components", [])]

    def has_plugin_module(self) -> bool:
        return (self.root / self.package_dir / f"{PLUGIN_MODULE}.py").is_file()


def _find_package(root: Path, doc: TOMLDocument, project_name: str) -> tuple[str, str]:
    tool = doc.get("tool", {})
    declared = tool.get(MANIFEST_TABLE, {}).get("package") if isinstance(tool, dict) else None
    candidates: list[Path] = []
    for base in (root / "src", root):
        if base.is_dir():
            candidates += [p.parent for p in sorted(base.glob("*/__init__.py")) if p.parent.name != "tests"]
    by_name = {path.name: path for path in candidates}
    wanted = declared or re.sub(r"[-.]+", "_", project_name).lower()
    if wanted in by_name:
        chosen = by_name[wanted]
    elif declared is None and len(by_name) == 1:
        chosen = next(iter(by_name.values()))
    else:
        found = ", ".join(sorted(by_name)) or "none"
        raise ScaffoldError(
            f"cannot tell which import package of {root} to add to (found: {found})",
            f"set package = \"NAME\" under [tool.{MANIFEST_TABLE}] in pyproject.toml",
        )
    return chosen.name, chosen.relative_to(root).as_posix()
