"""`turnlake build --revalidate` / `TURNLAKE_REVALIDATE=1` / the run tag `turnlake/revalidate`:
every contract reads every partition and bronze part file again instead of skipping those it
passed before (checks/partitioned.py). A module of its own, light to import: the no-change short
cut asks it before anything runs.

The request travels with the run as a tag (a step process reads its run's tags; `dg dev` users
set it on a launch), and a step's checks judge inside `revalidating`: a context variable, not an
environment variable, which a process must not change while Rust threads read the environment."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar

REVALIDATE_ENV = "TURNLAKE_REVALIDATE"
REVALIDATE_TAG = "turnlake/revalidate"
_TRUE = {"1", "true", "yes"}
_REVALIDATING: ContextVar[bool] = ContextVar("revalidating", default=False)


def revalidate_requested(tags: Mapping[str, str] | None = None) -> bool:
    """Whether this run re-reads everything: asked by its `tags`, by the environment, or (while
    a step's checks judge) by the step."""
    asked = (tags or {}).get(REVALIDATE_TAG, "")
    return (
        _REVALIDATING.get()
        or asked.strip().lower() in _TRUE
        or os.environ.get(REVALIDATE_ENV, "").strip().lower() in _TRUE
    )


def revalidate_tag(enabled: bool) -> dict[str, str]:
    """The run tag that asks for it (none when not asked)."""
    return {REVALIDATE_TAG: "true"} if enabled else {}


@contextmanager
def revalidating(enabled: bool) -> Iterator[None]:
    """Judge with full re-validation (if `enabled`) for the duration of the block, in this
    thread."""
    token = _REVALIDATING.set(enabled)
    try:
        yield
    finally:
        _REVALIDATING.reset(token)
