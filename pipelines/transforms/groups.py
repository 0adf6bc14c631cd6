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
    # the rounds join and group integers only: a unit is its rank, a person a number (by a hash
    # join: ranking the names sorted them); a pair given twice changes no minimum
    pairs = links.select("unit", pl.col("person").cast(pl.String)).drop_nulls()
    people = pairs.select("person").unique().with_row_index("number")
    pairs = (
        pairs.join(ranked.select("unit", "rank"), on="unit", how="inner")
        .join(people, on="person", how="inner")
        .select("rank", person="number")
    )
    at_pair = pairs.get_column("rank")
    label = ranked.get_column("rank")  # label[rank]: the smallest rank reached so far
    for _ in range(max_rounds):
        reached = (
            pairs.with_columns(label=label.gather(at_pair))
            .with_columns(pl.col("label").min().over("person"))
            .group_by("rank")
            .agg(pl.col("label").min())
        )
        at = reached.get_column("rank")
        lower = pl.select(pl.min_horizontal(label.gather(at), reached.get_column("label")))
        new = label.clone().scatter(at, lower.to_series())
        if new.equals(label):
            names = ranked.get_column("unit")
            return pl.DataFrame({"unit": names, "group": names.gather(label)}).sort("unit")
        label = new
    raise RuntimeError("person components did not converge")  # unreachable: labels only decrease
