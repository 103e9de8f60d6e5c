"""The base snapshot: a copy of what the tool last generated, kept in `.vllm-scaffold/base/<path>`.

`update` merges three ways (base, fresh render, your working tree), so a package must remember what it was
generated as. `new` writes the snapshot, `add` extends it with the component it adds (the same `add` run on
the snapshot, so the base shows exactly the tool's edits), `update` replaces it with the fresh render.
Plain copies keep it readable and diff-friendly: `git diff .vllm-scaffold/base` shows what a template
update changed. The package's ruff configuration excludes the folder; pytest skips dot-folders.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import tomlkit

from vllm_scaffold.generate.changeset import Changeset
from vllm_scaffold.generate.component import ANSWERS_DIR
from vllm_scaffold.project import Project

RECORDS_DIR = ANSWERS_DIR
BASE_DIR = f"{RECORDS_DIR}/base"


def generated_files(root: Path) -> dict[str, str]:
    """Every file under `root` outside `.vllm-scaffold/`, by relative posix path: what a render produced."""
    return {
        path.relative_to(root).as_posix(): path.read_text(encoding="utf-8")
        for path in sorted(root.rglob("*"))
        if path.is_file() and path.relative_to(root).parts[0] != RECORDS_DIR
    }


def base_files(root: Path) -> dict[str, str] | None:
    """The snapshot of the package at `root`, or None when it has none (generated before snapshots existed)."""
    base = root / BASE_DIR
    return generated_files(base) if base.is_dir() else None


def record(changes: Changeset) -> None:
    """Writes the snapshot of the package `changes` has just generated (the whole package: nothing else is in
    it yet) from the content it wrote, without reading it back."""
    for relpath, content in changes.created.items():
        if relpath.startswith(f"{RECORDS_DIR}/"):
            continue
        target = changes.root / BASE_DIR / relpath
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)


def plan_on_base(project: Project, change: Callable[[Changeset, Project], None]) -> Changeset | None:
    """The snapshot's own changeset for `change` (what `add` does), run on a scratch copy of the base.

    None when the project has no snapshot: a hand-written project, or one generated before snapshots.
    """
    base = project.root / BASE_DIR
    if not base.is_dir():
        return None
    with tempfile.TemporaryDirectory(prefix="vllm-scaffold-base-") as scratch:
        copy = Path(scratch) / "base"
        shutil.copytree(base, copy)
        _declare_range(copy / "pyproject.toml", project.manifest.get("vllm"))
        scratch_changes = Changeset(copy, project.package)
        change(scratch_changes, Project.load(copy))
        scratch_changes.check()
    changes = Changeset(project.root, project.package)
    for relpath, content in scratch_changes.created.items():
        if relpath.startswith(f"{RECORDS_DIR}/"):
            continue  # the answers file goes to the project itself, not into its snapshot
        changes.create(f"{BASE_DIR}/{relpath}", content, checked=True)
    for relpath, (_, after) in scratch_changes.edited.items():
        changes.edit(f"{BASE_DIR}/{relpath}", after, checked=True)
    return changes


def _declare_range(pyproject: Path, declared: object) -> None:
    """The project's vLLM range (`[tool.vllm-scaffold] vllm`, which its author may have narrowed since the
    snapshot) in the scratch base's pyproject.toml, so that the base renders the component against the same
    releases the project does."""
    if declared is None or not pyproject.is_file():
        return
    document = tomlkit.parse(pyproject.read_text(encoding="utf-8"))
    table = document.get("tool", {}).get("vllm-scaffold")
    if table is None or table.get("vllm") == declared:
        return
    table["vllm"] = declared
    pyproject.write_text(tomlkit.dumps(document), encoding="utf-8")
