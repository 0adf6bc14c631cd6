"""Replay results → the silver `replays` table, joined to the decision each one replays.

One row per (decision, persona): the same pair in several lines or files keeps the last (path,
then line order: a re-run replaces an earlier one); earlier copies with other content are
quarantined (`duplicate_conflict`). A result for a decision that does not exist is `orphan`.
`agrees`: the persona's action equals the original one, compared trimmed and without case.
"""

from __future__ import annotations

import polars as pl

from pipelines.transforms.decision.common import silver_quarantine
from pipelines.transforms.stable_ids import json_literal, json_string, stable_hash_expr

_CONTENT = ("decision_id", "persona", "model", "action", "confidence", "reasoning", "response")


def _rejected(rows: pl.DataFrame, kind: str, message: pl.Expr) -> pl.DataFrame:
    raw = pl.struct("decision_id", "persona", "action").struct.json_encode()
    return silver_quarantine(rows, kind, message, raw)


def _normalized(column: str) -> pl.Expr:
    return pl.col(column).str.strip_chars().str.to_lowercase()


def replays_table(
    results: pl.DataFrame, decisions: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(silver `replays` rows, silver quarantine rows) from the bronze replay results."""
    ranked = results.sort("file", "line", descending=True).with_columns(
        _last=pl.int_range(pl.len()).over("decision_id", "persona") == 0,
        _same=pl.struct(_CONTENT).hash()
        == pl.struct(_CONTENT).hash().first().over("decision_id", "persona"),
    )
    conflicts = _rejected(
        ranked.filter(~pl.col("_last") & ~pl.col("_same")),
        "duplicate_conflict",
        pl.format(
            "a later result replays decision {} as {} with other content", "decision_id", "persona"
        ),
    )
    kept = ranked.filter("_last")
    known = decisions.select(
        "decision_id",
        "episode_id",
        original_action="action",
        domain="domain",
    )
    orphans = _rejected(
        kept.join(known, on="decision_id", how="anti"),
        "orphan",
        pl.format("replay result for unknown decision {}", "decision_id"),
    )
    joined = kept.join(known, on="decision_id", how="inner")
    replays = joined.select(
        replay_id=stable_hash_expr(
            json_literal("replay"), json_string("decision_id"), json_string("persona")
        ),
        decision_id="decision_id",
        episode_id="episode_id",
        persona="persona",
        model="model",
        action="action",
        confidence="confidence",
        reasoning="reasoning",
        response="response",
        original_action="original_action",
        agrees=_normalized("action") == _normalized("original_action"),
        domain="domain",
        shape="shape",
        source_file="file",
        locator="locator",
    )
    return replays, pl.concat([conflicts, orphans])
