"""Decision `episodes`: one per session. Split unit: a human actor can decide in several sessions,
so `group_id` is the set of sessions linked by a shared human actor, named after its earliest
session (a session alone: itself). A part of the corpus is given the groups of the whole
(`units.unit_evidence`), since a group's other sessions may be elsewhere."""

from __future__ import annotations

import polars as pl

from pipelines.transforms.decision.common import SOURCE
from pipelines.transforms.groups import person_components


def episodes(
    decisions: pl.DataFrame, turns: pl.DataFrame, groups: pl.DataFrame | None = None
) -> pl.DataFrame:
    """One row per session; `groups` (`human_groups` of the whole corpus) when `decisions` are
    only part of it."""
    groups = human_groups(decisions) if groups is None else groups
    turn_counts = turns.group_by("episode_id").agg(n_turns=pl.len().cast(pl.Int64))
    grouped = (
        decisions.sort("file", "ordinal")
        .group_by("episode_id", maintain_order=True)
        .agg(
            native_id=pl.col("session_id").first(),
            started_at=pl.col("ts").min(),
            ended_at=pl.col("ts").max(),
            source_file=pl.col("file").first(),
            n_decisions=pl.len(),
            n_rated=pl.col("outcome").is_not_null().sum(),
            actor_ids=pl.col("actor_id").drop_nulls().unique().sort(),
            domains=pl.col("domain").drop_nulls().unique().sort(),
            files=pl.col("file").unique().sort(),
        )
    )
    return (
        grouped.join(turn_counts, on="episode_id", how="left")
        .join(groups, on="episode_id", how="left")
        .select(
            "episode_id",
            source=pl.lit(SOURCE),
            native_id="native_id",
            group_id=pl.coalesce("human_group", "episode_id"),
            started_at="started_at",
            ended_at="ended_at",
            n_turns=pl.col("n_turns").fill_null(0),
            end_reason=pl.lit(None, pl.String),
            attributes=pl.struct(
                "n_decisions", "n_rated", "actor_ids", "domains", "files"
            ).struct.json_encode(),
            source_file="source_file",
        )
        .sort("episode_id")
    )


def human_groups(decisions: pl.DataFrame) -> pl.DataFrame:
    """episode_id → human_group: sessions linked by a shared human actor form one split unit."""
    units = (
        decisions.group_by("episode_id")
        .agg(started_at=pl.col("ts").min())
        .rename({"episode_id": "unit"})
    )
    links = decisions.filter((pl.col("actor_kind") == "human") & pl.col("actor_id").is_not_null())
    components = person_components(units, links.select(unit="episode_id", person="actor_id"))
    return components.select(episode_id="unit", human_group="group")
