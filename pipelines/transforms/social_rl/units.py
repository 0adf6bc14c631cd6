"""social_rl silver units: one per run folder (`run:<run_dir>`), one per PRAR run
(`prar:<run_name>`).

A run's episodes are its rounds, but the transform reads a run as a whole (inline meta of its
earliest round, sibling meta.json, metrics, attachments, agent roles from any round's
adaptations, the policy state), so the unit is the folder, not the round. A PRAR state joins
the runs whose meta names it (`prar_run_id`, or the folder of `prar_state_file`): those runs
and the PRAR unit share the link `prar:<run_name>`.
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
    """Each run and every PRAR run its inline or sibling meta names share `prar:<name>`."""
    inline = (
        table(bronze, "social_rl_rounds")
        .filter(pl.col("meta").is_not_null())
        .select("run_dir", pl.col("meta").str.json_decode(INLINE_META).struct.unnest())
    )
    sibling = table(bronze, "social_rl_meta")
    named = (
        pl.concat(
            [
                frame.select(
                    "run_dir",
                    prar=pl.concat_list(
                        "prar_run_id", pl.col("prar_state_file").str.extract(PRAR_FOLDER)
                    ),
                )
                for frame in (inline, sibling)
            ]
        )
        .explode("prar")
        .drop_nulls("prar")
    )
    link = pl.lit("prar:") + pl.col("prar")
    return (
        pl.concat([named.select(unit=_run_unit(), link=link), named.select(unit=link, link=link)])
        .unique()
        .cast(LINKS_SCHEMA)
    )
