"""Shared by the dialogue transforms: bronze tables (empty when absent), ids, JSON attributes,
latest-copy dedup and silver quarantine rows."""

from __future__ import annotations

import polars as pl

from pipelines.schemas import conform, silver_schema

SOURCE = "dialogue"
CONVERSATIONS = "dialogue_conversations"
EVENTS = "dialogue_feedback_events"
RAW_EXCERPT_CHARS = 2000


def episode_id() -> pl.Expr:
    """`dialogue:<dataset>/<conversation_id>`: conversation ids are only unique within a dataset."""
    return pl.concat_str(pl.lit(f"{SOURCE}:"), native_id())


def native_id() -> pl.Expr:
    return pl.concat_str(pl.col("dataset"), pl.lit("/"), pl.col("conversation_id"))


def json_object(typed: dict[str, pl.Expr], raw_json: dict[str, str]) -> pl.Expr:
    """A JSON object of typed values plus columns that already hold JSON text (embedded as-is,
    not re-quoted, so `extra` stays a nested object)."""
    text = pl.struct(**typed).struct.json_encode()
    for key, column in raw_json.items():
        text = pl.concat_str(
            text.str.strip_suffix("}"),
            pl.lit(f',"{key}":'),
            pl.col(column).fill_null("null"),
            pl.lit("}"),
        )
    return text


def mark_latest(lf: pl.LazyFrame, keys: list[str]) -> pl.LazyFrame:
    """Order copies of one record by (file, line) and flag the latest; `latest_*` columns
    describe it.

    The later file (rel path order) wins, so a re-delivered, corrected file supersedes the old one.
    """
    latest = (pl.int_range(pl.len()) == pl.len() - 1).over(keys)
    return lf.sort(["file", "line"]).with_columns(
        is_latest=latest,
        latest_hash=pl.col("record_hash").last().over(keys),
        latest_file=pl.col("file").last().over(keys),
        latest_locator=pl.col("locator").last().over(keys),
    )


def conflicts_quarantine(marked: pl.LazyFrame, what: pl.Expr, raw: pl.Expr) -> pl.LazyFrame:
    """Superseded copies whose content differs from the kept one: `duplicate_conflict`."""
    message = pl.format(
        "{} appears again with different content; kept the copy in {} at {}",
        what,
        pl.col("latest_file"),
        pl.col("latest_locator"),
    )
    return silver_quarantine(
        marked.filter(~pl.col("is_latest") & (pl.col("record_hash") != pl.col("latest_hash"))),
        kind=pl.lit("duplicate_conflict"),
        message=message,
        raw=raw,
    )


def silver_quarantine(
    lf: pl.LazyFrame, *, kind: pl.Expr, message: pl.Expr, raw: pl.Expr
) -> pl.LazyFrame:
    schema = silver_schema("quarantine")
    return lf.select(
        source=pl.lit(SOURCE),
        file=pl.col("file"),
        locator=pl.col("locator"),
        error_kind=kind,
        message=message,
        raw=raw.str.slice(0, RAW_EXCERPT_CHARS),
        stage=pl.lit("silver"),
        run_id=pl.lit(None, dtype=pl.String),
    ).cast(dict(schema))


def conformed(frame: pl.LazyFrame, table: str) -> pl.LazyFrame:
    return conform(frame, silver_schema(table))
