"""Python's cyclic garbage collector set off less often: paused while bulk work allocates many
objects that form no reference cycles (parsed JSON records, bronze row dicts), and in a `turnlake`
process started after every 50 000 net container allocations instead of 700.

Reference counting still frees every such object; what the pause saves is the collector being
set off again and again by the allocations, each time walking every live container, the batch's
rows included: about a sixth of the CPU of the study's ingest at 100 MB. Outside the pauses, a
build's full collections walk the modules and definitions of Dagster, Polars and pandera again
and again: 0.66 s of CPU of a 7 s forced rebuild of the demo (scale 3), and 0.20 s in all with
the higher first threshold (no second- or third-generation pass left in that build). Memory
is not the collector's: frames and tables are freed by reference counting.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

# objects allocated (net) before a first-generation pass; Python's default is 700
FIRST_GENERATION_THRESHOLD = 50_000

P = ParamSpec("P")
R = TypeVar("R")


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """The collector is off inside (and back as it was after, also on an exception)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def without_cyclic_gc(function: Callable[P, R]) -> Callable[P, R]:
    """`function` runs with the cyclic collector paused."""

    @functools.wraps(function)
    def paused(*args: P.args, **kwargs: P.kwargs) -> R:
        with cyclic_gc_paused():
            return function(*args, **kwargs)

    return paused


def collect_less() -> None:
    """Start the collector's first-generation pass only after FIRST_GENERATION_THRESHOLD net
    allocations (the older generations' thresholds kept)."""
    _, second, third = gc.get_threshold()
    gc.set_threshold(FIRST_GENERATION_THRESHOLD, second, third)
