"""The waiting-queue policy of my_sched's scheduler, without an engine: order, starvation bound, removal."""

from __future__ import annotations

import pytest

pytest.importorskip("vllm")

from vllm import SamplingParams  # noqa: E402
from vllm.v1.request import Request  # noqa: E402

from my_sched.scheduler.queue import PRIORITY_KEY, ExtraArgsPriorityQueue, request_priority  # noqa: E402


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def make_request(request_id: str, arrival: float, priority: object = None) -> Request:
    extra_args = None if priority is None else {PRIORITY_KEY: priority}
    return Request(request_id, [1, 2, 3], SamplingParams(extra_args=extra_args), None, arrival_time=arrival)


def drain(queue: ExtraArgsPriorityQueue) -> list[str]:
    return [queue.pop_request().request_id for _ in range(len(queue))]


def test_higher_priority_first_then_arrival_order() -> None:
    queue = ExtraArgsPriorityQueue(max_wait_s=60.0, clock=FakeClock())
    for request in [
        make_request("plain-a", 100.0),
        make_request("low", 100.1, -1),
        make_request("plain-b", 100.2),
        make_request("high-a", 100.3, 5),
        make_request("mid", 100.4, 2),
        make_request("high-b", 100.5, 5),
    ]:
        queue.add_request(request)
    expected = ["high-a", "high-b", "mid", "plain-a", "plain-b", "low"]
    assert [request.request_id for request in queue] == expected
    assert drain(queue) == expected
    assert not queue and len(queue) == 0
    with pytest.raises(IndexError):
        queue.peek_request()


def test_no_request_waits_past_max_wait_s() -> None:
    clock = FakeClock()
    queue = ExtraArgsPriorityQueue(max_wait_s=10.0, clock=clock)
    queue.add_request(make_request("plain", 100.0))
    # Prioritised requests keep arriving; the plain one is passed over until it has waited 10 s.
    for step in range(20):
        clock.now = 100.0 + step
        queue.add_request(make_request(f"high-{step}", clock.now, 7))
        admitted = queue.pop_request().request_id
        if admitted == "plain":
            break
    assert admitted == "plain" and clock.now - 100.0 == 10.0


def test_overdue_requests_are_served_oldest_first() -> None:
    clock = FakeClock()
    queue = ExtraArgsPriorityQueue(max_wait_s=5.0, clock=clock)
    for request in [make_request("old", 90.0), make_request("older", 80.0, -3), make_request("new", 99.0, 9)]:
        queue.add_request(request)
    assert drain(queue) == ["older", "old", "new"]


def test_remove_and_prepend_keep_the_order() -> None:
    queue = ExtraArgsPriorityQueue(max_wait_s=60.0, clock=FakeClock())
    requests = {rid: make_request(rid, 100.0 + i, i) for i, rid in enumerate(["a", "b", "c", "d"])}
    for request in requests.values():
        queue.add_request(request)
    queue.remove_request(requests["c"])
    queue.remove_requests([requests["a"]])
    with pytest.raises(ValueError, match="not in the queue"):
        queue.remove_request(requests["a"])
    skipped = queue.pop_request()
    assert skipped.request_id == "d"
    queue.prepend_requests([skipped])
    assert drain(queue) == ["d", "b"]


@pytest.mark.parametrize(("value", "expected"), [(None, 0), (3, 3), (-2, -2), ("3", 0), (True, 0), (2.5, 0)])
def test_priority_comes_from_extra_args_and_bad_values_count_as_absent(value: object, expected: int) -> None:
    assert request_priority(make_request("r", 100.0, value)) == expected


def test_max_wait_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        ExtraArgsPriorityQueue(max_wait_s=0)
