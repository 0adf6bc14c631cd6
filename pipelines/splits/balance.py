"""Do the realized splits follow the configured ratios?

A split takes whole groups (DESIGN §4), and a group is every unit linked by a shared person
(pipelines/transforms/groups.py). Where people are shared widely — a pool of raters each rating
many conversations, the same human actor in most decision sessions — those links join most of a
source into one group, which lands whole in one split: the source's test split then holds only
what no shared person touches, far from the configured ratio. That is the price of keeping every
person on one side, not a bug; the operator must see it before trusting a score on the test split.
The numbers come from the saved query `split_balance` (one row per source and split).
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

BALANCE_SCHEMA = pl.Schema(
    {
        "source": pl.String,
        "split": pl.String,
        "episodes": pl.Int64,
        "share": pl.Float64,
        "groups": pl.Int64,
        "largest_group": pl.String,
        "largest_group_episodes": pl.Int64,
        "largest_group_share": pl.Float64,
        "largest_group_split": pl.String,
    }
)
TOLERANCE = 0.5  # a split off its ratio by more than half the ratio is reported
MIN_EPISODES = 50  # below this, shares of a source are noise


def balance_warnings(
    balance: pl.DataFrame,
    ratios: Mapping[str, float],
    tolerance: float = TOLERANCE,
    min_episodes: int = MIN_EPISODES,
) -> list[str]:
    """One line per source (with at least `min_episodes` episodes) whose share of episodes in a
    configured split differs from its ratio by more than `tolerance` × the ratio, naming the
    source's largest group when it holds more of the source than the smallest configured ratio."""
    out = []
    for (source,), rows in balance.sort("source", "split").group_by("source", maintain_order=True):
        total = int(rows["episodes"].sum())
        if total < min_episodes:
            continue
        off = off_ratio(dict(zip(rows["split"], rows["episodes"], strict=True)), ratios, tolerance)
        if not off:
            continue
        line = f"{source}: {', '.join(off)} of {total:,} episodes"
        first = rows.row(0, named=True)
        if first["largest_group_share"] > min(r for r in ratios.values() if r > 0):
            line += (
                f"; its largest group `{first['largest_group']}` holds "
                f"{first['largest_group_share']:.1%} ({first['largest_group_split']}): units "
                "linked by a shared person stay in one split"
            )
        out.append(line)
    return out


def off_ratio(
    counts: Mapping[str, int], ratios: Mapping[str, float], tolerance: float = TOLERANCE
) -> list[str]:
    """`split share (configured ratio)` for each configured split whose share of `counts` differs
    from its ratio by more than `tolerance` × the ratio (a split with no count has share 0)."""
    total = sum(counts.values())
    if not total:
        return []
    shares = {split: counts.get(split, 0) / total for split in ratios}
    return [
        f"{split} {shares[split]:.1%} (configured {ratio:.0%})"
        for split, ratio in ratios.items()
        if ratio > 0 and abs(shares[split] - ratio) > tolerance * ratio
    ]


def empty_balance() -> pl.DataFrame:
    return pl.DataFrame(schema=BALANCE_SCHEMA)
