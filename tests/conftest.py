"""Fixtures shared by the tool's own tests, and the order tests start in (the helpers live in tests/helpers.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import HANDWRITTEN_PYPROJECT, build_file_tree


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Engine runs and the tests that read doctor's live probes first.

    They take minutes each; the rest take seconds. A parallel run (scripts/test.sh runs pytest-xdist) that
    starts the long ones first ends with every worker busy on short tests instead of one worker finishing a
    long run alone. The sort is stable, and without xdist it changes nothing a test can observe.
    """
    items.sort(key=lambda item: not (item.get_closest_marker("engine") or "live_reports" in item.fixturenames))


@pytest.fixture
def handwritten(tmp_path: Path) -> Path:
    """A hand-written PEP 621 project with a src/ package and comments everywhere."""
    return build_file_tree(
        {"src/handmade_kernels/__init__.py": '"""Hand-made kernels."""\n', "pyproject.toml": HANDWRITTEN_PYPROJECT},
        tmp_path / "handmade",
    )
