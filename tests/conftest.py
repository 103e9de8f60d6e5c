"""Fixtures shared by the tool's own tests, and the order tests start in (the helpers live in tests/helpers.py)."""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path

import pytest

from tests.helpers import HANDWRITTEN_PYPROJECT, build_file_tree

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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The long tests first, spread over the workers so that each starts on its share of them.

    A handful of tests (fresh-clone CI runs of generated packages, engine runs in another vLLM release) take
    minutes; the other hundreds take seconds. pytest-xdist's worksteal scheduling (scripts/test.sh) hands each
    worker a contiguous share of this list and later moves tests from the end of a busy worker's queue to an
    idle one. So the long tests are dealt out first, each to the share with the least known time so far, and
    the short ones fill the shares up to the sizes xdist gives them: every worker begins with long tests and
    the run ends on short ones. The short tests that read a once-per-run fixture go first into the share of
    the first test reading it. Without xdist this is one share, longest first; the order changes nothing a
    test can observe.
    """
    known: dict[str, float] = json.loads(DURATIONS.read_text(encoding="utf-8")) if DURATIONS.is_file() else {}
    workers = max(1, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))
    sizes = _share_sizes(len(items), workers)
    shares: list[list[pytest.Item]] = [[] for _ in sizes]
    totals = [0.0] * workers
    long_tests = sorted((item for item in items if item.nodeid in known), key=lambda item: -known[item.nodeid])
    for item in long_tests:
        open_shares = [i for i in range(workers) if len(shares[i]) < sizes[i]]
        share = min(open_shares, key=lambda i: totals[i])
        shares[share].append(item)
        totals[share] += known[item.nodeid]
    short_tests = [item for item in items if item.nodeid not in known]
    for fixture in ONCE_PER_RUN_FIXTURES:
        index = next((i for i, share in enumerate(shares) if any(_reads(item, fixture) for item in share)), 0)
        readers = [item for item in short_tests if _reads(item, fixture)][: sizes[index] - len(shares[index])]
        shares[index].extend(readers)
        short_tests = [item for item in short_tests if item not in readers]
    short_tests_left = iter(short_tests)
    for share, size in zip(shares, sizes, strict=True):
        share.extend(next(short_tests_left) for _ in range(size - len(share)))
    items[:] = [item for share in shares for item in share]


def _reads(item: pytest.Item, fixture: str) -> bool:
    return fixture in getattr(item, "fixturenames", ())


def _share_sizes(count: int, workers: int) -> list[int]:
    """How many of `count` tests each of `workers` gets at the start (xdist's worksteal, initial distribution)."""
    sizes = []
    for remaining_workers in range(workers, 0, -1):
        sizes.append((count - sum(sizes)) // remaining_workers)
    return sizes


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
