"""The suite's start order (tests/start_order.py): each xdist worker's first share begins with long tests."""

from __future__ import annotations

from dataclasses import dataclass, field

from tests.start_order import share_sizes, start_order


@dataclass(frozen=True)
class FakeTest:
    nodeid: str
    fixturenames: tuple[str, ...] = field(default=())


def test_share_sizes_are_xdists_initial_split() -> None:
    assert share_sizes(544, 2) == [272, 272]
    assert share_sizes(7, 2) == [3, 4]
    assert share_sizes(10, 3) == [3, 3, 4]
    assert share_sizes(5, 1) == [5]


def test_long_tests_are_dealt_to_the_share_with_the_least_time() -> None:
    tests = [FakeTest(f"t{i}") for i in range(10)]
    seconds = {"t9": 300.0, "t8": 280.0, "t7": 100.0, "t2": 90.0}
    order = start_order(tests, seconds, workers=2, once_per_run=())
    first, second = order[:5], order[5:]
    assert [t.nodeid for t in first[:2]] == ["t9", "t2"]  # 300, then 90 against the other share's 280
    assert [t.nodeid for t in second[:2]] == ["t8", "t7"]
    assert sorted(t.nodeid for t in order) == sorted(t.nodeid for t in tests)
    # The short tests keep their collected order, filling each share to its size.
    assert [t.nodeid for t in order if t.nodeid not in seconds] == ["t0", "t1", "t3", "t4", "t5", "t6"]


def test_readers_of_a_once_per_run_fixture_share_the_worker_that_computes_it() -> None:
    tests = [FakeTest(f"short{i}") for i in range(6)]
    tests += [FakeTest(f"reader{i}", ("live_reports",)) for i in range(3)]
    tests += [FakeTest("long-a", ("live_reports",)), FakeTest("long-b"), FakeTest("long-c")]
    seconds = {"long-a": 50.0, "long-b": 200.0, "long-c": 100.0}
    order = [t.nodeid for t in start_order(tests, seconds, workers=2, once_per_run=("live_reports",))]
    first, second = order[:6], order[6:]
    assert first[:1] == ["long-b"] and second[:2] == ["long-c", "long-a"]
    assert second[2:5] == ["reader0", "reader1", "reader2"]


def test_one_worker_runs_longest_first() -> None:
    tests = [FakeTest("a"), FakeTest("b"), FakeTest("c")]
    order = start_order(tests, {"c": 9.0, "b": 20.0}, workers=1, once_per_run=())
    assert [t.nodeid for t in order] == ["b", "c", "a"]
