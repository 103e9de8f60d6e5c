"""Edits of a project's pyproject.toml with tomlkit: comments, order and formatting outside the added keys survive."""

from __future__ import annotations

import tomlkit
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from tomlkit.items import Table
from tomlkit.toml_document import TOMLDocument

from vllm_scaffold.errors import ScaffoldError
from vllm_scaffold.project import MANIFEST_TABLE


def _sub_table(parent: Table | TOMLDocument, key: str, *, super_table: bool) -> Table:
    if key not in parent:
        table = tomlkit.table(is_super_table=super_table)
        parent.append(key, table)
    table = parent[key]
    if not isinstance(table, Table):
        raise ScaffoldError(f"pyproject.toml: '{key}' is not a table", f"make '{key}' a TOML table")
    return table


def _spaced_table(values: dict[str, object]) -> Table:
    table = tomlkit.table()
    for key, value in values.items():
        table.add(key, value)
    table.add(tomlkit.nl())
    return table


def add_entry_point(doc: TOMLDocument, group: str, name: str, target: str) -> str:
    """Adds `name = target` under [project.entry-points."group"]; refuses a name the group already has."""
    entry_points = _sub_table(doc["project"], "entry-points", super_table=True)  # type: ignore[arg-type]
    if group in entry_points:
        existing = entry_points[group]
        if name in existing:
            raise ScaffoldError(
                f"entry point '{name}' already exists in group '{group}' ({existing[name]})", "choose another NAME"
            )
        existing.add(name, target)
    else:
        entry_points.append(group, _spaced_table({name: target}))
    return f'project.entry-points."{group}".{name} = "{target}"'


def ensure_manifest(doc: TOMLDocument, package: str, vllm_range: str) -> list[str]:
    """Creates [tool.vllm-scaffold] with the package and the vLLM range if the project has none."""
    tool = _sub_table(doc, "tool", super_table=True)
    if MANIFEST_TABLE in tool:
        return []
    tool.append(MANIFEST_TABLE, _spaced_table({"package": package, "vllm": vllm_range}))
    return [f'tool.{MANIFEST_TABLE}.package = "{package}"', f'tool.{MANIFEST_TABLE}.vllm = "{vllm_range}"']


def add_component(doc: TOMLDocument, component: dict[str, object]) -> str:
    """Appends one [[tool.vllm-scaffold.components]] entry."""
    manifest = doc["tool"][MANIFEST_TABLE]  # type: ignore[index]
    if "components" not in manifest:
        if not manifest.as_string().endswith("\n\n"):
            manifest.add(tomlkit.nl())
        manifest.append("components", tomlkit.aot())
    entry = tomlkit.table()
    for key, value in component.items():
        if isinstance(value, list):
            value = _multiline(value)
        elif isinstance(value, dict):
            value = _inline(value)
        entry.add(key, value)
    entry.add(tomlkit.nl())
    manifest["components"].append(entry)
    return f"tool.{MANIFEST_TABLE}.components[{component['name']}] ({component['seam']})"


def _inline(values: dict[str, object]):
    """A table written on one line, nested tables too: a component entry stays one block of keys."""
    table = tomlkit.inline_table()
    for key, value in values.items():
        table.append(key, _inline(value) if isinstance(value, dict) else value)
    return table


def _multiline(values: list[object]):
    array = tomlkit.array()
    array.extend(values)
    return array.multiline(True)


def add_test_requirement(doc: TOMLDocument, requirement: str) -> tuple[list[str], list[str]]:
    """Adds `requirement` to the `test` extra unless it is there; returns (changed keys, notes for the user).

    Where pyproject.toml does not own the extras (declared dynamic: a build hook or setup.py makes them) or
    `test` is not a list, nothing is edited and the note says what to add.
    """
    project = doc["project"]
    extras = project.get("optional-dependencies", {})  # type: ignore[union-attr]
    test = extras.get("test", []) if isinstance(extras, dict) else None
    if "optional-dependencies" in project.get("dynamic", []) or not isinstance(test, list):  # type: ignore[union-attr]
        return [], [f"test dependency: add {requirement} to the extra your tests install (not editable here)"]
    wanted = Requirement(requirement)
    for index, item in enumerate(test):
        existing = _parsed(str(item))
        if existing is None or canonicalize_name(existing.name) != canonicalize_name(wanted.name):
            continue
        if wanted.extras <= existing.extras:
            return [], []
        existing.extras |= wanted.extras
        test[index] = str(existing)
        return [f'project.optional-dependencies.test: "{item}" -> "{existing}"'], []
    if "test" in extras:
        test.append(requirement)
    else:
        _sub_table(project, "optional-dependencies", super_table=False).append("test", [requirement])  # type: ignore[arg-type]
    return [f'project.optional-dependencies.test += "{requirement}"'], []


def _parsed(text: str) -> Requirement | None:
    """`text` as a PEP 508 requirement, or None where it is not one."""
    try:
        return Requirement(text)
    except InvalidRequirement:
        return None
