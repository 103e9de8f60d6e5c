"""Shared helpers for the tool's own tests: the CLI runner and file-tree snapshots; the order tests start in."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from vllm_scaffold.cli import app


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Engine runs and grouped tests (one xdist group = one worker's run, such as doctor's live probes) first.

    They take minutes each; the rest take seconds. A parallel run (scripts/test.sh runs pytest-xdist) that
    starts the long ones first ends with every worker busy on short tests instead of one worker finishing a
    long run alone. The sort is stable, and without xdist it changes nothing a test can observe.
    """
    items.sort(key=lambda item: not (item.get_closest_marker("engine") or item.get_closest_marker("xdist_group")))


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under `root` (relative path -> bytes), to prove a failed command wrote nothing."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def cli() -> Callable[..., object]:
    runner = CliRunner()

    def invoke(*args: str, cwd: Path | None = None):
        if cwd is None:
            return runner.invoke(app, list(args))
        with pytest.MonkeyPatch.context() as patch:
            patch.chdir(cwd)
            return runner.invoke(app, list(args))

    return invoke


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


@pytest.fixture
def handwritten(tmp_path: Path) -> Path:
    """A hand-written PEP 621 project with a src/ package and comments everywhere."""
    root = tmp_path / "handmade"
    (root / "src" / "handmade_kernels").mkdir(parents=True)
    (root / "src" / "handmade_kernels" / "__init__.py").write_text('"""Hand-made kernels."""\n')
    (root / "pyproject.toml").write_text(HANDWRITTEN_PYPROJECT)
    return root
