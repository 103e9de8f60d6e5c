"""`new` and `add` as library calls, one linear pass each: render in scratch space, plan every creation and
edit in one changeset, check it, then write it (or, for a dry run, only describe it)."""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from vllm_scaffold import harness_requirement
from vllm_scaffold.catalog import templated_seam
from vllm_scaffold.errors import ScaffoldError
from vllm_scaffold.generate import harness_wheel, names, snapshot
from vllm_scaffold.generate.answers import recorded_data
from vllm_scaffold.generate.changeset import Changeset
from vllm_scaffold.generate.component import add_component, answers_file, check_component_name, render_into, split_data
from vllm_scaffold.generate.rendering import Asker
from vllm_scaffold.project import Project

PACKAGE_TEMPLATE = "package"


@dataclass
class Result:
    """What a command planned, and whether it was written: `changes` names every file and key."""

    root: Path  # the package made (`new`) or extended (`add`)
    changes: Changeset
    written: bool
    new_package: bool  # `new`: every path is inside the directory `root` names
    built: tuple[str, ...] = ()  # files written besides the rendered ones: `new`'s harness wheel

    def describe(self, *, diffs: bool = True) -> list[str]:
        """One line per created file, edited file, TOML key and note, then (with `diffs`, as a dry run shows
        them) the diff of each edited file."""
        prefix = f"{self.root.name}/" if self.new_package else ""
        return [f"create {prefix}{path}" for path in self.built] + self.changes.describe(prefix=prefix, diffs=diffs)


def package_destination(name: str, dest: Path | None) -> Path:
    """Where `new` creates package NAME (`dest`, or ./NAME); a ScaffoldError when NAME or that place won't do."""
    names.check_identifier(name, "NAME")
    path = (dest or Path.cwd() / name).absolute()
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        if dest is None:
            raise ScaffoldError(f"{path} exists and is not empty", "choose another NAME, or a directory with --dest")
        raise ScaffoldError(f"--dest {path} exists and is not empty", "choose a new or empty directory with --dest")
    existing = next(parent for parent in path.parents if parent.exists())
    if not existing.is_dir():
        raise ScaffoldError(f"{_where(dest)}{path} lies under {existing}, a file", "choose a path under a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ScaffoldError(f"{_where(dest)}{path} cannot be created: {existing} is not writable", _WRITABLE_FIX)
    return path


# What to do when the place `new` creates a package in cannot be written.
_WRITABLE_FIX = "choose a directory you can write with --dest"


def _where(dest: Path | None) -> str:
    """How a message names the package's place: as the --dest it came from, else by its path alone."""
    return "--dest " if dest is not None else ""


def _unwritable(dest: Path, error: OSError) -> ScaffoldError:
    """The one-line error for a place the operating system refused to create the package in."""
    reason = (error.strerror or type(error).__name__).lower()
    return ScaffoldError(f"{dest} cannot be created in {dest.parent} ({reason})", _WRITABLE_FIX)


def new_package(
    seam_key: str, name: str, dest: Path | None, data: dict[str, str], *, ask: Asker | None = None, dry_run: bool
) -> Result:
    """A new plugin package NAME holding one component of `seam_key`, moved into `dest` only when complete."""
    seam = templated_seam(seam_key)
    dest = package_destination(name, dest)
    assert seam.template is not None and seam.module is not None
    names.check_module_path(name, seam.module, "NAME")
    package_data, seam_data = split_data(data, PACKAGE_TEMPLATE, seam.template)

    scratch_parent = dest.parent if dest.parent.is_dir() else None
    try:  # the scratch space sits next to dest, so that the finished package is moved in with one rename
        scratch_space = tempfile.TemporaryDirectory(prefix=".vllm-scaffold-", dir=scratch_parent)
    except OSError as error:
        raise _unwritable(dest, error) from None
    with scratch_space as scratch:
        skeleton, stage = Path(scratch) / "skeleton", Path(scratch) / name
        context = {
            "package": name,
            "package_dir": f"src/{name}",
            "dist_name": names.dist_name(name),
            "env_prefix": names.env_prefix(name),
            "harness_requirement": harness_requirement(seam.harness_extras),
        }
        changes = Changeset(stage, name)
        answers = render_into(changes, PACKAGE_TEMPLATE, context, package_data, ask=ask, keep=skeleton)
        answers_file(changes, PACKAGE_TEMPLATE, PACKAGE_TEMPLATE, {**context, **answers})
        # The component is planned against the rendered skeleton, read as the project it will be.
        project = Project.load(skeleton)
        add_component(changes, project, seam, name, seam_data, module=seam.module, ask=ask)
        # The harness wheel in wheels/, so `pip install -e '.[test]' --find-links wheels` works before the
        # harness is on PyPI. Built, not rendered: it is neither in the changeset nor in the base snapshot.
        built = (harness_wheel.wheel_path(),)
        if dry_run:
            changes.check()
            return Result(dest, changes, written=False, new_package=True, built=built)
        changes.apply()
        snapshot.record(changes)
        harness_wheel.write_into(stage / harness_wheel.WHEELS_DIR)
        try:
            if dest.exists():
                dest.rmdir()
            if scratch_parent is None:
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.move(str(stage), dest)
            else:
                os.rename(stage, dest)
        except OSError as error:
            raise _unwritable(dest, error) from None
    return Result(dest, changes, written=True, new_package=True, built=built)


def render_example(seam_key: str, dest: Path) -> Path:
    """The seam's example package (the catalog's `example` name, every default answer) rendered into `dest`:
    what generated_examples/<seam>/ holds."""
    seam = templated_seam(seam_key)
    assert seam.example, f"catalog entry {seam_key} needs an `example` package name"
    return new_package(seam_key, seam.example, dest, {}, dry_run=False).root


def add_to_project(
    seam_key: str, name: str, root: Path, data: dict[str, str], *, ask: Asker | None = None, dry_run: bool
) -> Result:
    """Adds component NAME of `seam_key` to the project at `root`; every created file and changed key is listed."""
    seam = templated_seam(seam_key)
    assert seam.template is not None
    project = Project.load(root.absolute())
    check_component_name(project, name, name)
    (seam_data,) = split_data(data, seam.template)
    changes = Changeset(project.root, project.package)
    answers = add_component(changes, project, seam, name, seam_data, module=name, ask=ask)
    changes.check()
    # The snapshot takes the same component with the answers just given, so `update` can merge against it.
    (base_data,) = split_data(recorded_data(seam.template, answers), seam.template)
    base = snapshot.plan_on_base(
        project,
        lambda on_base, base_project: add_component(on_base, base_project, seam, name, base_data, module=name),
    )
    if not dry_run:
        changes.apply()
        if base is not None:
            base.apply()
    return Result(project.root, changes, written=not dry_run, new_package=False)
