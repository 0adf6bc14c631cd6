"""Study silver units: one per session (`study:<session_id>`, its episode id), one per participant
file owner (`participant:<participant_id>`, else `participant-file:<file>`).

A session's copies (own file, master JSONL, completed/exit participant file) all carry its
session id, so choosing the kept copy and reporting conflicting copies stay inside one unit.
A participant row yields the person's survey answers — the last file wins among one person's
files, hence one unit per person — and `willing` feedback on every session its post-surveys
name (an answer naming no known session is an orphan in that same place); so the participant
unit is linked to those sessions (`survey:<participant unit>`).
"""

from __future__ import annotations

import polars as pl

from pipelines.config.settings import Settings
from pipelines.transforms.study.signals import POST_SURVEY
from pipelines.transforms.units import LINKS_SCHEMA, UNIT

SESSION_PREFIX = "study:"


def _participant_unit() -> pl.Expr:
    return pl.coalesce(
        pl.lit("participant:") + pl.col("participant_id"),
        pl.lit("participant-file:") + pl.col("file"),
    )


def unit_keys(bronze: dict[str, pl.LazyFrame], settings: Settings) -> dict[str, pl.LazyFrame]:
    keys = {
        "study_sessions": pl.lit(SESSION_PREFIX) + pl.col("session_id"),
        "study_participants": _participant_unit(),
    }
    return {table: frame.with_columns(keys[table].alias(UNIT)) for table, frame in bronze.items()}


def unit_links(bronze: dict[str, pl.LazyFrame], settings: Settings) -> pl.LazyFrame:
    """A participant unit and every session its post-surveys name share `survey:<unit>`."""
    named = (
        bronze["study_participants"]
        .filter(pl.col("post_surveys").is_not_null())
        .select(
            unit=_participant_unit(),
            session=pl.col("post_surveys")
            .str.json_decode(POST_SURVEY)
            .list.eval(pl.element().struct.field("sessionId")),
        )
        .explode("session")
        .filter(pl.col("session").is_not_null())
    )
    link = pl.lit("survey:") + pl.col("unit")
    return (
        pl.concat(
            [
                named.select("unit", link=link),
                named.select(unit=pl.lit(SESSION_PREFIX) + pl.col("session"), link=link),
            ]
        )
        .unique()
        .cast(LINKS_SCHEMA)
    )
