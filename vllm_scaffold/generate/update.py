"""`update`: brings a package made by `new` (and grown by `add`) to the installed tool's templates.

The whole package is generated again in scratch space from its records in `.vllm-scaffold/` (the package
answers, then one component after another in the manifest's order, through the same `new` and `add` code),
and each file is merged three ways: the base snapshot (`.vllm-scaffold/base/`, what was generated last
time), the fresh render, and the working tree. `pyproject.toml` is merged key by key with tomlkit, like
`add` edits it. Everything is planned and checked before the first write; each write is atomic.

A package generated before snapshots existed has no base. When every answers record holds the installed
templates' digest (`identity.py`: the same templates, whatever the tool's version), the fresh render is that
base, so nothing changes and the snapshot is recorded. Otherwise (a digest differs, or a record from a tool
that kept none) each file that differs from the current templates gets a `<file>.rej` unified diff to review
and apply by hand (exit code 1), the changed templates are named, files the templates add are created, and
the snapshot is recorded for the next update.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from vllm_scaffold.catalog import templated_seam
from vllm_scaffold.errors import ScaffoldError
from vllm_scaffold.generate import harness_wheel, identity, snapshot
from vllm_scaffold.generate.answers import recorded_data
from vllm_scaffold.generate.changeset import Changeset, unified_diff
from vllm_scaffold.generate.component import vllm_range
from vllm_scaffold.generate.merge import merge_text, merge_toml
from vllm_scaffold.generate.scaffold import PACKAGE_TEMPLATE, add_to_project, new_package
from vllm_scaffold.project import Project, conflicts

PYPROJECT = "pyproject.toml"


@dataclass
class Update:
    """What `update` plans: the file changes, a line per file or key that changes or needs the user, and
    what is left for the user to resolve."""

    changes: Changeset
    lines: list[str] = field(default_factory=list)
    shown: list[str] = field(default_factory=list)  # the files of yours the dry run diffs (not the records)
    conflicts: list[str] = field(default_factory=list)  # paths (or pyproject keys) that need the user

    @property
    def root(self) -> Path:
        return self.changes.root

    def diff(self) -> list[str]:
        return self.changes.diff(self.shown)

    def apply(self) -> None:
        self.changes.apply()


def plan_update(root: Path) -> Update:
    """Everything `update` would write in the package at `root`; a ScaffoldError when it cannot update it."""
    root = root.absolute()
    records = read_records(root)
    fresh = render_fresh(records)
    generated = {path: text for path, text in fresh.items() if not path.startswith(f"{snapshot.RECORDS_DIR}/")}
    plan = Update(Changeset(root, str(records[PACKAGE_TEMPLATE]["answers"].get("package"))))
    base = snapshot.base_files(root)
    changed = identity.changed_templates(records)
    if base is None and not changed:
        plan.lines.append(
            f"no base snapshot in {snapshot.BASE_DIR}/: recorded it from the current templates, the very ones "
            "that generated this package (same templates digest); your files are kept as they are"
        )
        base = generated
    if base is None:
        plan.lines.append(
            f"no base snapshot in {snapshot.BASE_DIR}/, and the templates differ from the ones that generated "
            "this package: each file that differs from the current templates gets a .rej diff to review; the "
            "snapshot is recorded now, so the next update merges three ways"
        )
        plan.lines += [f"changed {line}" for line in changed]
        _plan_review(plan, generated)
    else:
        _plan_merge(plan, base, generated)
    _plan_leftover_conflicts(plan, generated)
    _plan_snapshot(plan, snapshot.base_files(root) or {}, generated)
    _plan_harness_wheel(plan)
    _plan_dropped_records(plan, records)
    for relpath, text in fresh.items():
        if relpath not in generated and _current(root, relpath) != text:
            plan.changes.write(relpath, text, checked=True)  # the answers records, now naming this tool version
    return plan


def read_records(root: Path, command: str = "update") -> dict[str, dict[str, Any]]:
    """The answers records of the package at `root` and of each component in the manifest's order, by file
    stem; a ScaffoldError naming `command` when `root` is no package made by `new`."""
    if not (root / PYPROJECT).is_file():
        raise ScaffoldError(
            f"no pyproject.toml in {root}",
            f"run 'vllm-scaffold {command}' in a package made by 'vllm-scaffold new', or pass --project DIR",
        )
    project = Project.load(root)
    vllm_range(project)  # a range add and migrate refuse is no package to call up to date either
    records_dir = root / snapshot.RECORDS_DIR
    stems = [PACKAGE_TEMPLATE] + [f"{c.get('seam')}-{c.get('name')}" for c in project.components()]
    if len(stems) == 1:
        raise ScaffoldError(
            f"{root / PYPROJECT} lists no [[tool.vllm-scaffold.components]]",
            f"{command} re-renders packages made by 'vllm-scaffold new'",
        )
    records: dict[str, dict[str, Any]] = {}
    for stem in stems:
        path = records_dir / f"{stem}.yml"
        if not path.is_file() and stem == PACKAGE_TEMPLATE:
            raise ScaffoldError(
                f"{path} is missing: {command} re-renders packages made by 'vllm-scaffold new'",
                "restore it from version control; a project 'new' did not make is compared with a fresh "
                "'vllm-scaffold new' by hand",
            )
        if not path.is_file():
            raise ScaffoldError(
                f"{path} is missing, so component '{stem}' cannot be generated again",
                "restore it from version control",
            )
        record = yaml.safe_load(path.read_text(encoding="utf-8"))
        if not isinstance(record, dict) or not isinstance(record.get("answers"), dict):
            raise ScaffoldError(f"{path} is not an answers record", "restore it from version control")
        records[stem] = record
    return records


def render_fresh(records: dict[str, dict[str, Any]]) -> dict[str, str]:
    """The package as the installed templates generate it from `records`: every file, answers records included."""
    package_answers = records[PACKAGE_TEMPLATE]["answers"]
    package = str(package_answers.get("package"))
    (first, first_record), *rest = [(stem, record) for stem, record in records.items() if stem != PACKAGE_TEMPLATE]
    first_answers = first_record["answers"]
    with tempfile.TemporaryDirectory(prefix="vllm-scaffold-update-") as scratch:
        dest = Path(scratch) / package
        with _answers_of(f".vllm-scaffold/{PACKAGE_TEMPLATE}.yml or .vllm-scaffold/{first}.yml"):
            seam = templated_seam(str(first_answers.get("seam")))
            if first_answers.get("name") != package or first_answers.get("module") != seam.module:
                raise ScaffoldError(
                    f"the first component '{first}' is not the one 'vllm-scaffold new' made",
                    "keep the component 'new' created first in [[tool.vllm-scaffold.components]]",
                )
            data = {**recorded_data(PACKAGE_TEMPLATE, package_answers), **_component_data(first_record)}
            new_package(seam.key, package, dest, data, dry_run=False)
        shutil.rmtree(dest / snapshot.BASE_DIR)  # the adds below need no snapshot of their own
        for stem, record in rest:
            answers = record["answers"]
            with _answers_of(f".vllm-scaffold/{stem}.yml"):
                add_to_project(
                    str(answers.get("seam")),
                    str(answers.get("name")),
                    dest,
                    _component_data(record),
                    dry_run=False,
                )
        # wheels/ holds the harness wheel `new` builds, not a render: `_plan_harness_wheel` keeps it current.
        return {
            path.relative_to(dest).as_posix(): path.read_text(encoding="utf-8")
            for path in sorted(dest.rglob("*"))
            if path.is_file() and path.relative_to(dest).parts[0] != harness_wheel.WHEELS_DIR
        }


@contextmanager
def _answers_of(records: str) -> Iterator[None]:
    """A recorded answer the current templates refuse is named with the file that holds it."""
    try:
        yield
    except ScaffoldError as error:
        raise ScaffoldError(
            f"rendering {records} again: {error.problem}",
            f"correct that answer in {records}, then run update again",
        ) from None


def _component_data(record: dict[str, Any]) -> dict[str, str]:
    return recorded_data(str(record["template"]), record["answers"])


def _current(root: Path, relpath: str) -> str | None:
    path = root / relpath
    return path.read_text(encoding="utf-8") if path.is_file() else None


def _plan_merge(plan: Update, base: dict[str, str], generated: dict[str, str]) -> None:
    for relpath in sorted(set(base) | set(generated)):
        was, now, yours = base.get(relpath), generated.get(relpath), _current(plan.root, relpath)
        if now is None:
            _plan_dropped(plan, relpath, was, yours)
        elif yours is None:
            if was is None:
                _write(plan, relpath, None, now, "create  ")
            elif was != now:
                plan.lines.append(f"skip    {relpath}: you deleted it, and the template changed it (not restored)")
        elif relpath == PYPROJECT:
            merged = merge_toml(was or "", yours, now)
            _write(plan, relpath, yours, merged.text, "update  ")
            plan.conflicts += [f"{PYPROJECT} {key}" for key in merged.keys]
            plan.lines += [
                f"conflict {PYPROJECT} {key}: kept yours, the template sets another value" for key in merged.keys
            ]
        else:
            merged = merge_text(was or "", yours, now)
            if merged.conflicts:
                plan.conflicts.append(relpath)
                _write(plan, relpath, yours, merged.text, "conflict ", f" ({merged.conflicts} between markers)")
            else:
                _write(plan, relpath, yours, merged.text, "update  ")


def _plan_dropped(plan: Update, relpath: str, was: str | None, yours: str | None) -> None:
    """A file the templates no longer generate: removed if you never edited it, else kept and listed."""
    if yours is None:
        return
    if yours == was:
        plan.changes.remove(relpath)
        plan.lines.append(f"remove  {relpath}")
        plan.shown.append(relpath)
    else:
        plan.lines.append(f"kept    {relpath}: the templates no longer generate it, and you edited it")


def _plan_review(plan: Update, generated: dict[str, str]) -> None:
    """Without a base: new files created, missing pyproject keys added, every other difference a .rej diff."""
    for relpath, now in sorted(generated.items()):
        yours = _current(plan.root, relpath)
        if yours is None:
            _write(plan, relpath, None, now, "create  ")
        elif relpath == PYPROJECT:
            merged = merge_toml("", yours, now)
            _write(plan, relpath, yours, merged.text, "update  ")
            plan.conflicts += [f"{PYPROJECT} {key}" for key in merged.keys]
            plan.lines += [f"review  {PYPROJECT} {key}: yours differs from the template" for key in merged.keys]
        elif yours != now:
            plan.conflicts.append(relpath)
            plan.changes.write(f"{relpath}.rej", "\n".join(unified_diff(relpath, yours, now)) + "\n", checked=True)
            plan.lines.append(f"review  {relpath}.rej (your file against the current template)")


def _plan_leftover_conflicts(plan: Update, generated: dict[str, str]) -> None:
    """Files that still hold conflict markers an earlier update wrote: listed and counted as conflicts, so the
    package is never called up to date (nor the exit code 0) until they are resolved."""
    newly = set(plan.conflicts)
    for relpath in sorted(set(generated) - newly):
        text = plan.changes.planned(relpath)
        lines = conflicts.marker_lines(text) if isinstance(text, str) else None
        if lines is None:
            lines = list(conflicts.unresolved(plan.root, [relpath]).values())
        if lines:
            plan.conflicts.append(relpath)
            plan.lines.append(unresolved_line(relpath, lines[0]))


def unresolved_line(relpath: str, line: int) -> str:
    """How `update` and `check-update` name a file that still holds the conflict markers of an earlier update."""
    return (
        f"unresolved {relpath}: conflict markers from an earlier update remain (line {line}); keep the lines you "
        f"want between '{conflicts.YOURS_MARKER}' and '{conflicts.TEMPLATE_MARKER}' and delete the markers"
    )


def unresolved(root: Path) -> dict[str, int]:
    """The generated files of the package at `root` (those its base snapshot lists) that still hold conflict
    markers, with the first marker's line; nothing is rendered."""
    return conflicts.unresolved(root, sorted(snapshot.base_files(root) or {}))


def dropped(root: Path, records: dict[str, dict[str, Any]]) -> list[str]:
    """The answers records (by file stem) of components gone from [[tool.vllm-scaffold.components]]: how a
    component is removed, its files going with it on the next update."""
    return [path.stem for path in sorted((root / snapshot.RECORDS_DIR).glob("*.yml")) if path.stem not in records]


def _plan_dropped_records(plan: Update, records: dict[str, dict[str, Any]]) -> None:
    for stem in dropped(plan.root, records):
        relpath = f"{snapshot.RECORDS_DIR}/{stem}.yml"
        plan.changes.remove(relpath)
        plan.lines.append(f"remove  {relpath}: its component is no longer in [[tool.vllm-scaffold.components]]")


def _plan_harness_wheel(plan: Update) -> None:
    """The harness wheel in wheels/ becomes this tool's, replacing other versions of the harness there.

    Only where the package keeps one: a package whose `wheels/` is gone installs the harness from PyPI. A
    wheel of the same version is never swapped for other bytes: pip treats the two as one release (it would
    not reinstall it, and the package's history would show a changed file under an unchanged version), so
    it is kept and listed.
    """
    folder = plan.root / harness_wheel.WHEELS_DIR
    if not folder.is_dir():
        return
    name, content = harness_wheel.wheel()
    path = folder / name
    if not path.is_file():
        plan.changes.create(f"{harness_wheel.WHEELS_DIR}/{name}", content, checked=True)
        plan.lines.append(f"create  {harness_wheel.WHEELS_DIR}/{name}")
    elif path.read_bytes() != content:
        plan.lines.append(
            f"kept    {harness_wheel.WHEELS_DIR}/{name}: this tool builds the same harness version with other "
            "content, and pip takes one for the other; to take this tool's, delete it and run update again"
        )
    for stale in sorted(folder.glob("vllm_scaffold_testing-*.whl")):
        if stale.name != name:
            plan.changes.remove(f"{harness_wheel.WHEELS_DIR}/{stale.name}")
            plan.lines.append(f"remove  {harness_wheel.WHEELS_DIR}/{stale.name}")


def _plan_snapshot(plan: Update, base: dict[str, str], generated: dict[str, str]) -> None:
    """The base snapshot becomes the fresh render."""
    for relpath, text in generated.items():
        if base.get(relpath) != text:
            plan.changes.write(f"{snapshot.BASE_DIR}/{relpath}", text, checked=True)
    for relpath in sorted(set(base) - set(generated)):
        plan.changes.remove(f"{snapshot.BASE_DIR}/{relpath}")


def _write(plan: Update, relpath: str, yours: str | None, after: str, verb: str, detail: str = "") -> None:
    if after == yours:
        return
    plan.changes.write(relpath, after, checked=True)  # your text merged with a checked render: yours to judge
    plan.lines.append(f"{verb}{relpath}{detail}")
    plan.shown.append(relpath)
