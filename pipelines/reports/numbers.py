"""The numbers of the build report, as small frames: pure functions over silver, gold, the
ingest logs and release manifests (no Dagster, no plotting)."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout

EXAMPLE_CHARS = 160  # an example's raw text is cut here: the report shows kinds, not records


def read_warehouse_table(
    layout: Layout, table: str, gold: bool = False, columns: list[str] | None = None
) -> pl.DataFrame | None:
    """One silver or gold table as published (only `columns`, when given), or None when it is
    not built (the one place the report reads silver/gold)."""
    layer = "gold" if gold else "silver"
    if not stored.exists(layout, layer, table):
        return None
    if columns is None:
        return stored.read(layout, layer, table)
    return stored.scan(layout, layer, table).select(columns).collect()


def reward_points(turn_rewards: pl.DataFrame, episodes: pl.DataFrame) -> pl.DataFrame:
    """source, reward_rule, reward: every reward with the source of its episode (the points of
    the distribution plot)."""
    return (
        turn_rewards.join(episodes.select("episode_id", "source"), on="episode_id", how="left")
        .select(pl.col("source").fill_null("(unknown)"), "reward_rule", "reward")
        .sort("source", "reward_rule", "reward")
    )


def reward_ticks(points: pl.DataFrame, step: float = 0.01) -> pl.DataFrame:
    """source, reward_rule, reward (rounded to `step`), rewards: how many rewards fall on each
    tick of the distribution plot. A plot's data is embedded in its spec, so it gets at most
    2 / step + 1 ticks per source and rule, not one point per reward (42 k turn rewards at
    100 MB of raw files would be 42 k data rows in the page)."""
    return (
        points.group_by("source", "reward_rule", reward=(pl.col("reward") / step).round() * step)
        .agg(rewards=pl.len().cast(pl.Int64))
        .sort("source", "reward_rule", "reward")
    )


def reward_stats(points: pl.DataFrame) -> pl.DataFrame:
    """Per source and rule: rewards, min, mean, max, and how many are negative / zero / positive."""
    return (
        points.group_by("source", "reward_rule")
        .agg(
            pl.len().cast(pl.Int64).alias("rewards"),
            pl.col("reward").min().round(3).alias("min"),
            pl.col("reward").mean().round(3).alias("mean"),
            pl.col("reward").max().round(3).alias("max"),
            (pl.col("reward") < 0).sum().cast(pl.Int64).alias("negative"),
            (pl.col("reward") == 0).sum().cast(pl.Int64).alias("zero"),
            (pl.col("reward") > 0).sum().cast(pl.Int64).alias("positive"),
        )
        .sort("source", "reward_rule")
    )


def quarantine_by_night(quarantine: pl.DataFrame, ingest_logs: pl.DataFrame) -> pl.DataFrame:
    """night (UTC date the raw file was last parsed, from the ingest logs), source, error_kind, n.

    A rejected record counts on the night its file was read; a file the logs do not know (a
    silver rejection of a file since removed) counts under a null night."""
    nights = ingest_logs.select(
        "source", "file", pl.col("parsed_at").dt.date().alias("night")
    ).unique(["source", "file"], keep="last")
    return (
        quarantine.join(nights, on=["source", "file"], how="left")
        .group_by("night", "source", "error_kind")
        .agg(pl.len().cast(pl.Int64).alias("n"))
        .sort("night", "source", "error_kind", nulls_last=True)
    )


def quarantine_examples(quarantine: pl.DataFrame) -> pl.DataFrame:
    """One example per source, stage and error kind (the first by file and locator), its raw
    text cut to EXAMPLE_CHARS."""
    return (
        quarantine.sort("source", "stage", "error_kind", "file", "locator")
        .group_by("source", "stage", "error_kind", maintain_order=True)
        .agg(
            pl.len().cast(pl.Int64).alias("n"),
            pl.col("file").first(),
            pl.col("locator").first(),
            pl.col("message").first(),
            pl.col("raw").first().str.slice(0, EXAMPLE_CHARS),
        )
    )


def split_sizes(splits: pl.DataFrame) -> pl.DataFrame:
    """split, groups: how many groups each split holds."""
    return splits.group_by("split").agg(pl.len().cast(pl.Int64).alias("groups")).sort("split")


def release_contents(manifest: dict) -> pl.DataFrame:
    """dataset, split, rows of one release (its manifest's counts)."""
    rows = [
        {"dataset": dataset, "split": split, "rows": int(n)}
        for dataset, per_split in manifest.get("counts", {}).items()
        for split, n in per_split.items()
    ]
    schema = {"dataset": pl.String, "split": pl.String, "rows": pl.Int64}
    return pl.DataFrame(rows, schema=schema, orient="row").sort("dataset", "split")


def release_diff(previous: dict | None, current: dict) -> pl.DataFrame:
    """dataset, split, rows_before, rows_after, change: rows per dataset and split of the current
    release against the previous one (no previous release: everything is new).

    Kept in this one function so `turnlake diff` (part "card") can replace it."""
    after = release_contents(current).rename({"rows": "rows_after"})
    before = (
        release_contents(previous)
        if previous
        else pl.DataFrame(schema={"dataset": pl.String, "split": pl.String, "rows": pl.Int64})
    ).rename({"rows": "rows_before"})
    return (
        before.join(after, on=["dataset", "split"], how="full", coalesce=True)
        .with_columns(pl.col("rows_before", "rows_after").fill_null(0))
        .with_columns((pl.col("rows_after") - pl.col("rows_before")).alias("change"))
        .sort("dataset", "split")
    )


@dataclass(frozen=True)
class CheckResult:
    """One asset check's verdict in a run."""

    asset: str
    check: str
    passed: bool
    blocking: bool
    description: str | None = None


def check_table(results: list[CheckResult]) -> pl.DataFrame:
    """asset, check, result (passed / FAILED / warning), blocking, description; failures first."""
    schema = {
        "asset": pl.String,
        "check": pl.String,
        "result": pl.String,
        "blocking": pl.Boolean,
        "description": pl.String,
    }
    rows = [
        {
            "asset": r.asset,
            "check": r.check,
            "result": "passed" if r.passed else ("FAILED" if r.blocking else "warning"),
            "blocking": r.blocking,
            "description": r.description,
        }
        for r in results
    ]
    order = pl.col("result").replace_strict({"FAILED": 0, "warning": 1, "passed": 2})
    return pl.DataFrame(rows, schema=schema, orient="row").sort(order, "asset", "check")
