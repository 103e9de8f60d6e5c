"""When Python's cyclic garbage collector runs during a doctor run: off while syntax trees are built and walked.

Standard library only, so the command line can declare itself a one-run process (`short_lived_process`) at
start-up without importing the rest of doctor.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

_freeze_on_resume = False


def short_lived_process() -> None:
    """Declares that this process ends after one command (the command line, a benchmark of it).

    Then what a paused section built is frozen (`gc.freeze`) when the collector resumes: otherwise the first
    allocation after it makes the collector walk every syntax-tree node just built, once in the run and again
    at interpreter exit (about a second each on a 100,000-line plugin). Frozen objects are still freed by
    reference counting; only cycles among them are kept. A long-lived process (the tests, a library caller)
    does not call this, so nothing it builds is kept."""
    global _freeze_on_resume
    _freeze_on_resume = True


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while syntax trees are built and walked: they hold no cycles,
    and the collector rescanning their millions of new objects costs three times the parsing itself."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            if _freeze_on_resume:
                gc.freeze()
            gc.enable()
