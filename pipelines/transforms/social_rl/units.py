"""social_rl silver units: one per run folder (`run:<run_dir>`), one per PRAR run
(`prar:<run_name>`).

A run's episodes are its rounds, but the transform reads a run as a whole (inline meta of its
earliest round, sibling meta.json, metrics, attachments, agent roles from any round's
adaptations, the policy state), so the unit is the folder, not the round. A PRAR state joins
the runs whose meta names it (`prar_run_id`, or the folder of `prar_state_file`): those runs
and the PRAR unit share the link `prar:<run_name>`. Runs of one experiment share
`experiment:<id>` (their split group), so a group never spans partitions.
"""

from __future__ import annotations

import polars as pl

from pipelines.config.settings import Settings
from pipelines.transforms.social_rl.common import table
from pipelines.transforms.social_rl.runs import INLINE_META
from pipelines.transforms.units import LINKS_SCHEMA, UNIT

PRAR_FOLDER = r"([^/\\]+)[/\\]state\.json$"  # as runs.run_context reads prar_state_file


def _run_unit() -> pl.Expr:
    return pl.lit("run:") + pl.col("run_dir")


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
    """`prar:<name>`: a run and every PRAR run its inline or sibling meta names (the transform
    joins them). `experiment:<id>`: the run folders of one experiment, one split group
    (episodes.group_id) — not needed for the transform, but it keeps a group in one component,
    hence one partition (DESIGN §8)."""
    metas = _metas(bronze)
    prar = (
        metas.select(
            "run_dir",
            name=pl.concat_list("prar_run_id", pl.col("prar_state_file").str.extract(PRAR_FOLDER)),
        )
        .explode("name")
        .drop_nulls("name")
        .select("run_dir", link=pl.lit("prar:") + pl.col("name"))
    )
    experiment = metas.drop_nulls("experiment_id").select(
        "run_dir", link=pl.lit("experiment:") + pl.col("experiment_id")
    )
    return (
        pl.concat(
            [
                pl.concat([prar, experiment]).select(unit=_run_unit(), link="link"),
                prar.select(unit="link", link="link"),
            ]
        )
        .unique()
        .cast(LINKS_SCHEMA)
    )


def _metas(bronze: dict[str, pl.LazyFrame]) -> pl.LazyFrame:
    """run_dir and the meta fields links read, from inline meta blocks and sibling meta.json."""
    fields = ("run_dir", "experiment_id", "prar_run_id", "prar_state_file")
    inline = (
        table(bronze, "social_rl_rounds")
        .filter(pl.col("meta").is_not_null())
        .select("run_dir", pl.col("meta").str.json_decode(INLINE_META).struct.unnest())
    )
    return pl.concat([inline.select(fields), table(bronze, "social_rl_meta").select(fields)])
