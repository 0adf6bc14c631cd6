"""Run rounds → episodes: one episode per run round, with the run's context joined per folder.

A run's meta (inline `meta` block first, then the sibling meta.json), its PRAR state, metrics file
and attachments are joined per run folder; the same round in two files is quarantined at stage
"silver" (the first file by path is kept).
"""

from __future__ import annotations

import polars as pl

from pipelines.transforms.social_rl.common import SOURCE, json_object

PRE_VERSIONED = "pre-0.2.0"  # runs written before social_rl_version existed
META_COLUMNS = (
    "experiment_id",
    "social_rl_version",
    "model",
    "framework",
    "framework_option",
    "prar_run_id",
    "prar_state_file",
)
INLINE_META = pl.Struct({name: pl.String for name in META_COLUMNS})


def with_episode_ids(rounds: pl.LazyFrame) -> pl.LazyFrame:
    native = pl.concat_str(
        pl.col("run_dir"), pl.lit("/round"), pl.col("round_number").cast(pl.String)
    )
    return rounds.with_columns(native_id=native, episode_id=pl.lit(f"{SOURCE}:") + native)


def first_copy() -> pl.Expr:
    # The same run round in two files (round1 / round01): keep the first by path, flag the rest.
    return pl.col("file").rank("ordinal").over("episode_id") == 1


def duplicates(rounds: pl.LazyFrame) -> pl.LazyFrame:
    first_file = pl.col("file").min().over("episode_id")
    return rounds.filter(~first_copy()).select(
        source=pl.lit(SOURCE),
        file="file",
        locator="locator",
        error_kind=pl.lit("duplicate_conflict"),
        message=pl.format(
            "round {} of run {} is also in {}; kept that copy",
            "round_number",
            "run_dir",
            first_file,
        ),
        raw=pl.lit(None, pl.String),
        stage=pl.lit("silver"),
    )


def group_id() -> pl.Expr:
    """One experiment is one split group, whichever folder its rounds were written to."""
    return (
        pl.when(pl.col("experiment_id").is_not_null())
        .then(pl.lit("experiment:") + pl.col("experiment_id"))
        .otherwise(pl.lit("run:") + pl.col("run_dir"))
    )


def prar_runs(prar_states: pl.LazyFrame) -> pl.LazyFrame:
    """prar_run, prar_file, prar_current_step: what a run naming a PRAR run reads of its state
    (the first state file of that run name)."""
    return prar_states.select(
        prar_run="run_name", prar_file="file", prar_current_step="current_step"
    ).unique("prar_run", keep="first", maintain_order=True)


def named_prar_run() -> pl.Expr:
    """The PRAR run a meta names: `prar_run_id`, else the folder of `prar_state_file`."""
    return pl.coalesce(
        "prar_run_id", pl.col("prar_state_file").str.extract(r"([^/\\]+)[/\\]state\.json$")
    )


def run_context(
    rounds: pl.LazyFrame, bronze: dict[str, pl.LazyFrame], prar: pl.LazyFrame | None = None
) -> pl.LazyFrame:
    """One row per run folder: meta fields (inline block first, then meta.json), PRAR link,
    metrics file, attachments. `prar`: `prar_runs` of the whole corpus when this bronze is only
    part of it (units.py)."""
    inline = (
        rounds.filter(pl.col("meta").is_not_null())
        .sort("run_dir", "round_number")
        .select("run_dir", pl.col("meta").str.json_decode(INLINE_META).struct.unnest())
        .group_by("run_dir")
        .agg(pl.col(name).drop_nulls().first().alias(f"inline_{name}") for name in META_COLUMNS)
    )
    sibling = (
        bronze["social_rl_meta"]
        .select("run_dir", *META_COLUMNS, meta_extra="extra", meta_file="file")
        .unique("run_dir", keep="first", maintain_order=True)
    )
    runs = (
        rounds.select("run_dir")
        .unique()
        .join(inline, on="run_dir", how="left")
        .join(sibling, on="run_dir", how="left")
        .with_columns(pl.coalesce(f"inline_{name}", name).alias(name) for name in META_COLUMNS)
        .with_columns(
            meta_source=pl.when(pl.col("inline_experiment_id").is_not_null())
            .then(pl.lit("inline"))
            .when(pl.col("meta_file").is_not_null())
            .then(pl.lit("meta.json")),
            prar_run=named_prar_run(),
        )
    )
    if prar is None:
        prar = prar_runs(bronze["social_rl_prar_states"])
    metric_files = (
        bronze["social_rl_metrics"]
        .select("run_dir", metrics_file="file")
        .unique("run_dir", keep="first", maintain_order=True)
    )
    return (
        runs.join(prar, on="prar_run", how="left")
        .join(metric_files, on="run_dir", how="left")
        .join(_attachments(bronze["social_rl_attachments"]), on="run_dir", how="left")
    )


def _attachments(attachments: pl.LazyFrame) -> pl.LazyFrame:
    """Files a run folder holds besides rounds, meta, metrics and policy state (bronze keeps
    their text: `bronze.social_rl_attachments`)."""
    return (
        attachments.filter(pl.col("run_kind") == SOURCE)
        .sort("file")
        .group_by("run_dir")
        .agg(attachments=pl.col("file"))
    )


def episodes(rounds: pl.LazyFrame, runs: pl.LazyFrame) -> pl.LazyFrame:
    ts = pl.col("messages").list.eval(pl.element().struct.field("ts"))
    version = pl.coalesce("social_rl_version", pl.lit(PRE_VERSIONED))
    return rounds.join(runs, on="run_dir", how="left").select(
        "episode_id",
        source=pl.lit(SOURCE),
        native_id="native_id",
        group_id=group_id(),
        started_at=ts.list.min(),
        ended_at=ts.list.max(),
        n_turns=pl.col("messages").list.len().cast(pl.Int64),
        end_reason=pl.lit(None, pl.String),
        attributes=json_object(
            run_dir=pl.col("run_dir"),
            round_number=pl.col("round_number"),
            experiment_id=pl.col("experiment_id"),
            social_rl_version=version,
            model=pl.col("model"),
            framework=pl.col("framework"),
            framework_option=pl.col("framework_option"),
            meta_source=pl.col("meta_source"),
            synthesis=pl.col("synthesis"),
            duration_seconds=pl.col("duration_seconds"),
            prar_run=pl.col("prar_run"),
            prar_state_file=pl.coalesce("prar_file", "prar_state_file"),
            prar_current_step=pl.col("prar_current_step"),
            metrics_file=pl.col("metrics_file"),
            attachments=pl.col("attachments"),
            round_config=pl.col("round_config"),
            meta_extra=pl.col("meta_extra"),
            extra=pl.col("extra"),
        ),
        source_file="file",
    )
