"""social_rl silver units: one per run folder (`run:<run_dir>`), one per PRAR run
(`prar:<run_name>`).

A run's episodes are its rounds, but the transform reads a run as a whole (inline meta of its
earliest round, sibling meta.json, metrics, attachments, agent roles from any round's
adaptations, the policy state), so the unit is the folder, not the round.

No links. A run reads the PRAR state its meta names (`prar_run_id`, or the folder of
`prar_state_file`): its file and step, which is evidence (`prar_runs` of the whole corpus, each
run reading the row of the PRAR run it names), not a link: a night's new runs continuing a PRAR
run would otherwise join every earlier run of it into one component, transformed again whole. A
run's split group (its experiment) is its own meta's, and the partition map places whole groups
(partitions/assign.py), so runs of one experiment need no link either.
"""

from __future__ import annotations

import polars as pl

from pipelines.config.settings import Settings
from pipelines.schemas import bronze_table
from pipelines.schemas.bronze.social_rl import BRONZE_MODELS
from pipelines.transforms.social_rl.runs import (
    INLINE_META,
    first_copy,
    group_id,
    named_prar_run,
    prar_runs,
    run_context,
    with_episode_ids,
)
from pipelines.transforms.units import GROUPS_SCHEMA, LINKS_SCHEMA, UNIT


def _run_unit() -> pl.Expr:
    return pl.lit("run:") + pl.col("run_dir")


# the stored column each table's rows are read by (transforms/units.py SCAN_KEYS)
SCAN_KEYS = {t: "run_name" if t == "social_rl_prar_states" else "run_dir" for t in BRONZE_MODELS}


def unit_keys(bronze: dict[str, pl.LazyFrame], settings: Settings) -> dict[str, pl.LazyFrame]:
    keys = {
        "social_rl_prar_states": pl.lit("prar:") + pl.col("run_name"),
        "social_rl_attachments": pl.when(pl.col("run_kind") == "prar")
        .then(pl.lit("prar:") + pl.col("run_dir"))
        .otherwise(_run_unit()),
    }
    return {
        name: frame.with_columns(keys.get(name, _run_unit()).alias(UNIT))
        for name, frame in bronze.items()
    }


def unit_links(bronze: dict[str, pl.LazyFrame], settings: Settings) -> pl.LazyFrame:
    return pl.LazyFrame(schema=LINKS_SCHEMA)


def unit_evidence(bronze: dict[str, pl.LazyFrame], settings: Settings) -> dict[str, pl.LazyFrame]:
    return {"prar_runs": prar_runs(bronze_table(bronze, "social_rl_prar_states"))}


def unit_evidence_reads(
    bronze: dict[str, pl.LazyFrame], settings: Settings
) -> dict[str, pl.LazyFrame]:
    """A run reads the row of each PRAR run its inline or sibling meta names."""
    named = _metas(bronze).select(_run_unit().alias(UNIT), prar_run=named_prar_run())
    return {"prar_runs": named.drop_nulls("prar_run").unique()}


def _metas(bronze: dict[str, pl.LazyFrame]) -> pl.LazyFrame:
    """run_dir and the meta fields naming a PRAR run, from inline meta blocks and sibling
    meta.json."""
    fields = ("run_dir", "prar_run_id", "prar_state_file")
    inline = (
        bronze_table(bronze, "social_rl_rounds")
        .filter(pl.col("meta").is_not_null())
        .select("run_dir", pl.col("meta").str.json_decode(INLINE_META).struct.unnest())
    )
    return pl.concat([inline.select(fields), bronze_table(bronze, "social_rl_meta").select(fields)])


def unit_groups(
    bronze: dict[str, pl.LazyFrame], settings: Settings, evidence: dict[str, pl.LazyFrame]
) -> pl.LazyFrame:
    """unit, group_id: a run folder's split group is its experiment (the meta its rounds carry,
    else its meta.json: `runs.group_id`), else the folder; a PRAR run has none."""
    tables = {name: bronze_table(bronze, name) for name in BRONZE_MODELS}
    kept = with_episode_ids(tables["social_rl_rounds"]).filter(first_copy())
    context = run_context(kept, tables)
    folders = pl.concat(
        [
            frame.select("run_dir")
            for name, frame in tables.items()
            if name not in ("social_rl_prar_states", "social_rl_attachments")
        ]
        + [tables["social_rl_attachments"].filter(pl.col("run_kind") != "prar").select("run_dir")]
    ).unique()
    rounds = kept.group_by("run_dir").agg(episodes=pl.col("episode_id").n_unique())
    return (
        folders.join(context.select("run_dir", "experiment_id"), on="run_dir", how="left")
        .join(rounds, on="run_dir", how="left")
        .select(unit=_run_unit(), group_id=group_id(), episodes=pl.col("episodes").fill_null(0))
        .cast(dict(GROUPS_SCHEMA))
    )
