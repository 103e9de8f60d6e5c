"""`new` and `add` as library calls: plan in scratch space, check, then show or write."""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import yaml

from vllm_scaffold import HARNESS_REQUIREMENT, names, snapshot
from vllm_scaffold.answers import recorded_data
from vllm_scaffold.catalog import templated_seam
from vllm_scaffold.changeset import Changeset
from vllm_scaffold.component import add_component, answers_file, split_data
from vllm_scaffold.errors import ScaffoldError
from vllm_scaffold.formatting import format_tree
from vllm_scaffold.project import Project
from vllm_scaffold.rendering import render

PACKAGE_TEMPLATE = "package"


@dataclass
class Result:
    root: Path
    lines: list[str]


def package_destination(name: str, dest: Path | None) -> Path:
    """Where `new` creates package NAME (`dest`, or ./NAME); a ScaffoldError when NAME or that place won't do."""
    names.check_identifier(name, "NAME")
    path = (dest or Path.cwd() / name).absolute()
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        if dest is None:
            raise ScaffoldError(f"{path} exists and is not empty", "choose another NAME, or a directory with --dest")
        raise ScaffoldError(f"--dest {path} exists and is not empty", "choose a new or empty directory with --dest")
    return path


def new_package(
    seam_key: str, name: str, dest: Path | None, data: dict[str, str], *, interactive: bool, dry_run: bool
) -> Result:
    """A new plugin package NAME holding one component of `seam_key`, moved into `dest` only when complete."""
    seam = templated_seam(seam_key)
    dest = package_destination(name, dest)
    assert seam.template is not None and seam.module is not None
    package_data, _ = split_data(data, PACKAGE_TEMPLATE, seam.template)

    scratch_parent = dest.parent if dest.parent.is_dir() else None
    with tempfile.TemporaryDirectory(prefix=".vllm-scaffold-", dir=scratch_parent) as scratch:
        stage = Path(scratch) / name
        context = {
            "package": name,
            "package_dir": f"src/{name}",
            "dist_name": names.dist_name(name),
            "env_prefix": names.env_prefix(name),
            "harness_requirement": HARNESS_REQUIREMENT,
        }
        # The skeleton renders straight into the stage: it is the whole directory, nothing to merge with.
        answers = render(PACKAGE_TEMPLATE, stage, context, package_data, interactive=interactive)
        format_tree(stage, name)
        base = Changeset(stage, name)
        answers_file(base, PACKAGE_TEMPLATE, PACKAGE_TEMPLATE, {**context, **answers})
        base.apply()

        project = Project.load(stage)
        component = Changeset(stage, name)
        seam_data = {key: value for key, value in data.items() if key not in package_data}
        add_component(component, project, seam, name, seam_data, module=seam.module, interactive=interactive)
        component.apply()

        files = sorted(p.relative_to(stage).as_posix() for p in stage.rglob("*") if p.is_file())
        if dry_run:
            return Result(dest, [f"create {dest.name}/{path}" for path in files])
        snapshot.record(stage)
        if dest.exists():
            dest.rmdir()
        if scratch_parent is None:
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(stage), dest)
        else:
            os.rename(stage, dest)
    return Result(dest, [f"created {dest} ({len(files)} files)"])


def add_to_project(
    seam_key: str, name: str, root: Path, data: dict[str, str], *, interactive: bool, dry_run: bool
) -> Result:
    """Adds component NAME of `seam_key` to the project at `root`; every created file and changed key is listed."""
    seam = templated_seam(seam_key)
    names.check_identifier(name, "NAME")
    project = Project.load(root.absolute())
    changes = Changeset(project.root, project.package)
    add_component(changes, project, seam, name, data, module=name, interactive=interactive)
    changes.check()
    # The snapshot takes the same component with the answers just given, so `update` can merge against it.
    answers = yaml.safe_load(changes.created[f"{snapshot.RECORDS_DIR}/{seam.key}-{name}.yml"])["answers"]
    assert seam.template is not None
    base_data = recorded_data(seam.template, answers)
    base = snapshot.plan_on_base(
        project,
        lambda on_base, base_project: add_component(
            on_base, base_project, seam, name, base_data, module=name, interactive=False
        ),
    )
    if base is not None:
        base.check()
    if not dry_run:
        changes.apply()
        if base is not None:
            base.apply()
    return Result(project.root, changes.describe())
