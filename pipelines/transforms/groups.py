"""Split units that keep a person on one side: units linked by a shared human become one group.

A split unit (`episodes.group_id`) must never let a human subject straddle train and test. When the
same person can appear in several native units (one human actor across decision sessions, one rater
across conversations), the group is the connected component of those units under "shares a person",
named after its earliest unit, so a unit alone keeps its own id and later data rarely renames one.
"""

from __future__ import annotations

import polars as pl


def person_components(
    units: pl.DataFrame, links: pl.DataFrame, max_rounds: int = 10_000
) -> pl.DataFrame:
    """`units` (unit, started_at) and `links` (unit, person) → one row per unit: unit, group =
    the earliest unit (started_at, then id; unknown times last) of its component of units sharing
    a person.

    Earliest, not smallest id: new data is usually later, so joining a component does not rename
    it; only a unit bridging two components renames the later one (unavoidable: those people must
    now share a split). Label propagation, vectorized: O(component diameter) rounds.
    """
    ranked = (
        units.select("unit", "started_at")
        .unique("unit")
        .sort("started_at", "unit", nulls_last=True)
    )
    ranked = ranked.with_columns(rank=pl.int_range(pl.len(), dtype=pl.Int64))
    pairs = links.select("unit", pl.col("person").cast(pl.String)).drop_nulls().unique()
    pairs = pairs.join(ranked.select("unit", "rank"), on="unit", how="inner")
    label = ranked.select("unit", label="rank")
    for _ in range(max_rounds):
        per_person = pairs.join(label, on="unit").group_by("person").agg(pl.col("label").min())
        reached = (
            pairs.join(per_person, on="person")
            .group_by("unit")
            .agg(pl.col("label").min().alias("via"))
        )
        new = label.join(reached, on="unit", how="left").select(
            "unit", label=pl.min_horizontal("label", "via")
        )
        if new.sort("unit").equals(label.sort("unit")):
            names = ranked.select(label="rank", group="unit")
            return new.join(names, on="label").select("unit", "group").sort("unit")
        label = new
    raise RuntimeError("person components did not converge")  # unreachable: labels only decrease
