"""Gold's aggregations of several raters' values do not depend on the order the values arrive in:
a parallel group_by does not keep it from run to run, so a rebuild of the same silver would give
other gold (seen at 1 GB: 413 `rater_spread` values differing in their last bits)."""

from itertools import permutations

import polars as pl
import pytest

from pipelines.gold.common import aggregate
from pipelines.gold.raters import std_spread

# six ratings whose population std, summed online in arrival order, differs in the last bits
# between orders (three distinct results over the 720 orders without sorting)
VALUES = [0.1, 0.7, 0.3, 0.2, 0.9, 0.05]
# six rewards whose mean, summed in arrival order, differs in the last bits between orders
REWARDS = [0.1, 0.2, 0.3, 1e-17, 0.7, 0.6]


def _over_every_order(expr: pl.Expr, values: list[float] = VALUES) -> set[float]:
    return {
        pl.DataFrame({"g": [1] * len(values), "v": list(order)})
        .group_by("g")
        .agg(out=expr)
        .get_column("out")[0]
        for order in permutations(values)
    }


def test_rater_spread_is_the_same_float_in_every_arrival_order() -> None:
    spreads = _over_every_order(std_spread(pl.col("v")))
    assert len(spreads) == 1
    # mean 2.25 / 6 = 0.375; squared deviations sum to 0.59875; / 6, square root
    assert spreads.pop() == pytest.approx((0.59875 / 6) ** 0.5, abs=1e-12)


@pytest.mark.parametrize("method", ["mean", "median", "min", "max"])
def test_an_aggregated_reward_is_the_same_float_in_every_arrival_order(method: str) -> None:
    assert len(_over_every_order(aggregate(pl.col("v"), method), REWARDS)) == 1
