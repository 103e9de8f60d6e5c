"""The order the suite's tests start in: the long ones first, spread over the pytest-xdist workers.

A handful of tests (fresh-clone CI runs of generated packages, engine runs in another vLLM release) take
minutes; the other hundreds take seconds. pytest-xdist's worksteal scheduling (scripts/test.sh) hands each
worker a contiguous share of the collected list and later moves tests from the end of a busy worker's queue
to an idle one. So the long tests are dealt out first, each to the share with the least known time so far,
and the short ones fill the shares up to the sizes xdist gives them: every worker begins on long tests and
the run ends on short ones. The short tests that read a once-per-run fixture (tests.helpers.once_per_run) go
first into the share of the first test reading it, so the other worker never waits on its lock. With one
worker this is one share, longest first. The order changes nothing a test can observe.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, TypeVar


class _Test(Protocol):
    nodeid: str
    fixturenames: Sequence[str]


T = TypeVar("T", bound=_Test)


def share_sizes(count: int, workers: int) -> list[int]:
    """How many of `count` tests each of `workers` gets at the start (xdist's worksteal, initial distribution)."""
    sizes: list[int] = []
    for remaining_workers in range(workers, 0, -1):
        sizes.append((count - sum(sizes)) // remaining_workers)
    return sizes


def start_order(tests: Sequence[T], seconds: Mapping[str, float], workers: int, once_per_run: Sequence[str]) -> list[T]:
    """`tests` reordered; `seconds` holds the known time of each long test by node id."""
    sizes = share_sizes(len(tests), workers)
    shares: list[list[T]] = [[] for _ in sizes]
    totals = [0.0] * len(sizes)
    for test in sorted((t for t in tests if t.nodeid in seconds), key=lambda t: -seconds[t.nodeid]):
        index = min((i for i in range(len(sizes)) if len(shares[i]) < sizes[i]), key=lambda i: totals[i])
        shares[index].append(test)
        totals[index] += seconds[test.nodeid]
    short = [test for test in tests if test.nodeid not in seconds]
    for fixture in once_per_run:
        index = next((i for i, share in enumerate(shares) if any(fixture in t.fixturenames for t in share)), 0)
        readers = [test for test in short if fixture in test.fixturenames][: sizes[index] - len(shares[index])]
        shares[index].extend(readers)
        short = [test for test in short if test not in readers]
    rest = iter(short)
    for share, size in zip(shares, sizes, strict=True):
        share.extend(next(rest) for _ in range(size - len(share)))
    return [test for share in shares for test in share]
