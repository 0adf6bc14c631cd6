"""`turnlake decision compare`: per decision the original action beside each persona's, and how
often each persona agrees with the original, per domain (the saved query
`replay_agreement` computes the same rates in SQL)."""

from __future__ import annotations

import polars as pl


def actions_side_by_side(replays: pl.DataFrame) -> pl.DataFrame:
    """One row per replayed decision: its domain, original action, then one column per persona
    (its action; null where that persona did not replay the decision)."""
    if replays.is_empty():
        return pl.DataFrame(
            schema={"decision_id": pl.String, "domain": pl.String, "original_action": pl.String}
        )
    wide = replays.pivot(
        on="persona",
        index=["decision_id", "domain", "original_action"],
        values="action",
        sort_columns=True,
    )
    return wide.sort("decision_id")


def agreement_rates(replays: pl.DataFrame) -> pl.DataFrame:
    """Per persona and domain: replayed decisions, how many agree with the original action, and
    the agreement rate (agreeing / replayed)."""
    return (
        replays.group_by("persona", "domain")
        .agg(
            replayed=pl.len().cast(pl.Int64),
            agreeing=pl.col("agrees").sum().cast(pl.Int64),
        )
        .with_columns(agreement_rate=pl.col("agreeing") / pl.col("replayed"))
        .sort("persona", "domain", nulls_last=True)
    )
