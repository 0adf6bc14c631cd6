"""Which copy of a decision is kept: a decision exported to JSONL and also kept in the SQLite
database is one decision. Identical copies collapse; differing copies keep the one with an
outcome, then the one from the later file (path order), and quarantine the others as
`duplicate_conflict` (silver quarantine)."""

from __future__ import annotations

import polars as pl

from pipelines.transforms.decision.common import silver_quarantine

# Where a record was stored, not what it says: two copies differing only here are identical.
_STORAGE_COLUMNS = ("file", "locator", "ordinal", "file_kind", "rag_context_encoding", "extra")


def reconcile_copies(records: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """One row per decision_id, plus silver quarantine rows for copies that disagree with it."""
    content = [c for c in records.columns if c not in _STORAGE_COLUMNS]
    ranked = records.with_columns(
        _content_key=pl.struct(content).hash(),
        _has_outcome=pl.col("outcome").is_not_null(),
    ).sort(["decision_id", "_has_outcome", "file", "ordinal"], descending=[False, True, True, True])
    ranked = ranked.with_columns(
        _is_winner=pl.int_range(pl.len()).over("decision_id") == 0,
        _winner_key=pl.col("_content_key").first().over("decision_id"),
        _winner_file=pl.col("file").first().over("decision_id"),
        _winner_locator=pl.col("locator").first().over("decision_id"),
        _winner_rated=pl.col("_has_outcome").first().over("decision_id"),
    )
    kept = ranked.filter("_is_winner").drop(pl.selectors.starts_with("_"))
    losers = ranked.filter(
        ~pl.col("_is_winner") & (pl.col("_content_key") != pl.col("_winner_key"))
    )
    return kept, _conflict_rows(losers)


def _conflict_rows(losers: pl.DataFrame) -> pl.DataFrame:
    reason = (
        pl.when(pl.col("_winner_rated") & ~pl.col("_has_outcome"))
        .then(pl.lit("it has an outcome and this copy does not"))
        .otherwise(pl.lit("it comes from a later file"))
    )
    message = pl.format(
        "decision {} has a different copy in {} ({}); kept that copy because {}",
        "decision_id",
        "_winner_file",
        "_winner_locator",
        reason,
    )
    raw = pl.struct(
        "decision_id", "action", "confidence", "outcome", pl.col("ts").dt.to_string()
    ).struct.json_encode()
    return silver_quarantine(losers, "duplicate_conflict", message, raw)
