"""Fixtures shared by the tool's own tests, and the order tests start in (the helpers live in tests/helpers.py)."""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path

import pytest

from tests.helpers import HANDWRITTEN_PYPROJECT, build_file_tree
from tests.start_order import start_order

# Seconds each test of five or more took in a whole run on two workers (setup, call and teardown), by node id;
# written by `pytest --record-durations`. Only the order tests start in depends on it.
DURATIONS = Path(__file__).with_name("durations.json")
RECORDED_FROM_S = 5.0
# Session fixtures computed once per run under a lock (tests.helpers.once_per_run): the tests that read one run
# on the worker that computes it, so the other worker never waits on the lock.
ONCE_PER_RUN_FIXTURES = ("live_reports",)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--record-durations",
        action="store_true",
        help=f"write {DURATIONS.name} from this run: every test that took {RECORDED_FROM_S:.0f} s or more",
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The long tests first, spread over the workers (tests/start_order.py)."""
    known: dict[str, float] = json.loads(DURATIONS.read_text(encoding="utf-8")) if DURATIONS.is_file() else {}
    workers = max(1, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))
    items[:] = start_order(items, known, workers, ONCE_PER_RUN_FIXTURES)


_durations: defaultdict[str, float] = defaultdict(float)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _durations[report.nodeid] += report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    if not config.getoption("record_durations") or hasattr(config, "workerinput"):
        return  # recorded by the controller, which receives every worker's reports
    long_tests = {nodeid: round(seconds, 1) for nodeid, seconds in _durations.items() if seconds >= RECORDED_FROM_S}
    DURATIONS.write_text(json.dumps(dict(sorted(long_tests.items())), indent=1) + "\n", encoding="utf-8")


@pytest.fixture
def handwritten(tmp_path: Path) -> Path:
    """A hand-written PEP 621 project with a src/ package and comments everywhere."""
    return build_file_tree(
        {"src/handmade_kernels/__init__.py": '"""Hand-made kernels."""\n', "pyproject.toml": HANDWRITTEN_PYPROJECT},
        tmp_path / "handmade",
    )
