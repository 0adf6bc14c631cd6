"""The filters of `turnlake decision list`: which rows of the decision index to keep."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import polars as pl


@dataclass(frozen=True)
class DecisionFilter:
    """What `decision list` keeps; a field left None does not filter. `actor` matches the actor's
    id or name, `actor_type` the silver kind (human, ai) or the source's own type; `since` is
    inclusive, `until` exclusive."""

    actor: str | None = None
    actor_type: str | None = None
    session: str | None = None
    action: str | None = None
    domain: str | None = None
    rated: bool | None = None
    since: datetime | None = None
    until: datetime | None = None


def _equals_any(value: str, *columns: str) -> pl.Expr:
    wanted = value.strip().lower()
    return pl.any_horizontal(
        [pl.col(c).str.to_lowercase().eq(wanted).fill_null(False) for c in columns]
    )


def select_decisions(index: pl.DataFrame, wanted: DecisionFilter) -> pl.DataFrame:
    """The rows of `index` that pass every filter set in `wanted` (text matches ignore case)."""
    keep = pl.lit(True)
    if wanted.actor is not None:
        keep &= _equals_any(wanted.actor, "actor_id", "actor_name")
    if wanted.actor_type is not None:
        keep &= _equals_any(wanted.actor_type, "actor_type", "native_actor_type")
    if wanted.session is not None:
        keep &= _equals_any(wanted.session, "session_id", "episode_id")
    if wanted.action is not None:
        keep &= _equals_any(wanted.action, "action")
    if wanted.domain is not None:
        keep &= _equals_any(wanted.domain, "domain")
    if wanted.rated is not None:
        keep &= pl.col("rated") == wanted.rated
    if wanted.since is not None:
        keep &= (pl.col("ts") >= wanted.since).fill_null(False)
    if wanted.until is not None:
        keep &= (pl.col("ts") < wanted.until).fill_null(False)
    return index.filter(keep)
