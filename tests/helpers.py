"""Helpers for the tool's own tests: the CLI run in-process, pytest run in a project, file trees written from a
spec, snapshots."""

from __future__ import annotations

import fcntl
import json
import pickle
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from textwrap import dedent
from typing import TypeVar

import pytest
from click.testing import Result
from typer.testing import CliRunner

from vllm_scaffold.cli import app

T = TypeVar("T")


def run_cli(*args: str, cwd: Path | None = None) -> Result:
    """`vllm-scaffold ARGS` in this process (from `cwd` when given): exit code, stdout and stderr apart."""
    runner = CliRunner()
    if cwd is None:
        return runner.invoke(app, list(args))
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(cwd)
        return runner.invoke(app, list(args))


def run_pytest(project: Path, *args: str, env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    """`python -m pytest -q ARGS` in `project`, in a fresh interpreter with `env`; the output is captured."""
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]
    return subprocess.run(
        command, cwd=project, env=dict(env), capture_output=True, text=True, timeout=1800, check=False
    )


def build_file_tree(spec: Mapping[str, str], root: Path) -> Path:
    """Writes each `relative path -> text` of `spec` under `root` (text dedented, a leading newline dropped),
    creating folders as needed; returns `root`."""
    for relpath, text in spec.items():
        path = root / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(dedent(text).lstrip("\n"), encoding="utf-8")
    return root


def plugin_pyproject(
    name: str, entry_point: str, group: str = "vllm.general_plugins", *, wheel: Sequence[str] = (), entry: str = "fx"
) -> str:
    """The pyproject.toml of a small plugin package `name`: one entry point, `entry = "entry_point"`, in `group`.
    `wheel` lists the import packages a hatch wheel holds, for a package that ships more than its own (a
    `vllm/` overlay)."""
    text = f'[project]\nname = "{name}"\nversion = "0.1.0"\n\n[project.entry-points."{group}"]\n'
    text += f'{entry} = "{entry_point}"\n'
    if wheel:
        text += f"\n[tool.hatch.build.targets.wheel]\npackages = {json.dumps(list(wheel))}\n"
    return text


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under `root` (relative path -> bytes), to prove a failed command wrote nothing."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


HANDWRITTEN_PYPROJECT = """\
# A project written by hand, long before vllm-scaffold.
[build-system]
requires = ["hatchling"]  # pinned below in CI
build-backend = "hatchling.build"

[project]
name = "handmade-kernels"   # distribution name
version = "0.3.1"
dependencies = [
    "numpy>=1.26",  # used by the benchmarks
]

[project.optional-dependencies]
dev = ["pytest"]

[tool.ruff]
line-length = 99   # house style
"""


def once_per_run(tmp_path_factory: pytest.TempPathFactory, name: str, compute: Callable[[], T]) -> T:
    """`compute()` once per pytest run, whatever the number of pytest-xdist workers, and its result in each.

    The first worker to ask computes it and leaves it pickled in the run's shared temporary directory (the
    parent of each worker's own); one that asks meanwhile waits on the same lock and then reads it. For
    session fixtures too costly to compute on every worker (tests cannot choose their worker: pytest-xdist's
    `xdist_group` has no effect under pytest 9).
    """
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if base.name.startswith("popen-gw") else base
    result = shared / f"{name}.pickle"
    with (shared / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not result.is_file():
            result.write_bytes(pickle.dumps(compute()))
        return pickle.loads(result.read_bytes())
