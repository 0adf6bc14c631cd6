"""`turnlake build --revalidate` / `TURNLAKE_REVALIDATE=1`: every contract reads every partition
and bronze part file again instead of skipping those it passed before (checks/partitioned.py).
A module of its own, light to import: the no-change short cut asks it before anything runs."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

REVALIDATE_ENV = "TURNLAKE_REVALIDATE"


def revalidate_requested() -> bool:
    return os.environ.get(REVALIDATE_ENV, "").strip().lower() in {"1", "true", "yes"}


@contextmanager
def revalidation(enabled: bool) -> Iterator[None]:
    """Force full re-validation for the duration of the block (read by the step processes too)."""
    previous = os.environ.get(REVALIDATE_ENV)
    if enabled:
        os.environ[REVALIDATE_ENV] = "1"
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(REVALIDATE_ENV, None)
        else:
            os.environ[REVALIDATE_ENV] = previous
