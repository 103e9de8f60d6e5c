"""The waiting queue of my_sched's scheduler: highest `extra_args["priority"]` first, bounded waiting.

Loaded in the engine core, when `my_sched.scheduler.policy` builds its scheduler. vLLM's Scheduler
builds its waiting queue from the scheduling policy; the policy puts this queue in its
place, a RequestQueue (peek, pop, add, prepend, remove, iterate) that decides which waiting request is
admitted next. Running requests, preemption and KV-cache accounting stay with the base class.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import time
from collections.abc import Callable, Iterable, Iterator

from vllm.v1.core.sched.request_queue import RequestQueue
from vllm.v1.request import Request

logger = logging.getLogger(__name__)

PRIORITY_KEY = "priority"
DEFAULT_PRIORITY = 0


def request_priority(request: Request, key: str = PRIORITY_KEY) -> int:
    """The int in `request.sampling_params.extra_args[key]`; DEFAULT_PRIORITY when absent or not an int."""
    params = request.sampling_params
    extra_args = params.extra_args if params is not None else None
    if not extra_args or key not in extra_args:
        return DEFAULT_PRIORITY
    value = extra_args[key]
    if isinstance(value, bool) or not isinstance(value, int):
        # Raising here would kill the engine core for every request; a bad value is treated as absent.
        logger.warning(
            "request %s: extra_args[%r] = %r is not an int; scheduling it with priority %d",
            request.request_id,
            key,
            value,
            DEFAULT_PRIORITY,
        )
        return DEFAULT_PRIORITY
    return value


class ExtraArgsPriorityQueue(RequestQueue):
    """Orders waiting requests by `extra_args["priority"]` (higher first), then by arrival.

    Starvation bound: a request that has waited `max_wait_s` seconds or more since its arrival
    (`Request.arrival_time`) goes ahead of every request that has waited less, and such overdue requests
    are served oldest first. So a request without the parameter (priority 0) waits behind prioritised
    traffic for at most `max_wait_s` seconds; after that it is served as under vLLM's FCFS policy.
    Preempted requests keep their arrival time, so they are usually overdue and resume first, as in FCFS.

    Cost: add, pop and remove are O(log n) amortised (two heaps with lazy deletion); peek is O(1)
    amortised. Iteration (used for stats and resets) sorts a copy.
    """

    def __init__(
        self,
        max_wait_s: float = 10.0,
        key: str = PRIORITY_KEY,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not max_wait_s > 0:
            raise ValueError(f"max_wait_s must be a positive number of seconds, got {max_wait_s!r}")
        self.max_wait_s = float(max_wait_s)
        self.key = key
        self._clock = clock  # Must be the clock of Request.arrival_time (time.time in vLLM 0.32).
        self._seq = itertools.count()
        # request_id -> (entry seq, priority, request); heap entries whose seq differs are dead.
        self._members: dict[str, tuple[int, int, Request]] = {}
        self._by_priority: list[tuple[int, float, int, str]] = []  # (-priority, arrival, seq, request_id)
        self._by_arrival: list[tuple[float, int, str]] = []  # (arrival, seq, request_id)

    # RequestQueue interface -------------------------------------------------------------------------

    def add_request(self, request: Request) -> None:
        seq = next(self._seq)
        priority = request_priority(request, self.key)
        self._members[request.request_id] = (seq, priority, request)
        heapq.heappush(self._by_priority, (-priority, request.arrival_time, seq, request.request_id))
        heapq.heappush(self._by_arrival, (request.arrival_time, seq, request.request_id))

    def pop_request(self) -> Request:
        request = self.peek_request()
        del self._members[request.request_id]
        self._compact()
        return request

    def peek_request(self) -> Request:
        if not self._members:
            raise IndexError("peek from an empty queue")
        oldest = self._top(self._by_arrival, seq_index=1)
        if self._clock() - oldest[0] >= self.max_wait_s:
            return self._members[oldest[2]][2]
        return self._members[self._top(self._by_priority, seq_index=2)[3]][2]

    def prepend_request(self, request: Request) -> None:
        # No "front" in a priority order: skipped and preempted requests return by priority and age.
        self.add_request(request)

    def prepend_requests(self, requests: Iterable[Request]) -> None:
        for request in requests:
            self.add_request(request)

    def remove_request(self, request: Request) -> None:
        if self._members.pop(request.request_id, None) is None:
            raise ValueError(f"request {request.request_id} is not in the queue")
        self._compact()

    def remove_requests(self, requests: Iterable[Request]) -> None:
        for request in requests:
            self._members.pop(request.request_id, None)
        self._compact()

    def __bool__(self) -> bool:
        return bool(self._members)

    def __len__(self) -> int:
        return len(self._members)

    def __iter__(self) -> Iterator[Request]:
        """Requests in the order they would be popped now."""
        now = self._clock()
        ordered = sorted(self._members.values(), key=lambda member: self._order(member, now))
        return iter([request for _, _, request in ordered])

    # Internals --------------------------------------------------------------------------------------

    def _order(self, member: tuple[int, int, Request], now: float) -> tuple:
        seq, priority, request = member
        if now - request.arrival_time >= self.max_wait_s:
            return (0, request.arrival_time, seq)
        return (1, -priority, request.arrival_time, seq)

    def _top(self, heap: list, seq_index: int) -> tuple:
        """The first live entry of `heap`, dropping entries of removed or re-added requests."""
        while heap:
            entry = heap[0]
            member = self._members.get(entry[-1])
            if member is not None and member[0] == entry[seq_index]:
                return entry
            heapq.heappop(heap)
        raise IndexError("peek from an empty queue")

    def _compact(self) -> None:
        """Rebuilds the heaps when dead entries outnumber live ones, so memory stays O(live requests)."""
        if len(self._by_arrival) <= 2 * len(self._members) + 64:
            return
        live = {request_id: member[0] for request_id, member in self._members.items()}
        self._by_priority = [e for e in self._by_priority if live.get(e[3]) == e[2]]
        self._by_arrival = [e for e in self._by_arrival if live.get(e[2]) == e[1]]
        heapq.heapify(self._by_priority)
        heapq.heapify(self._by_arrival)
