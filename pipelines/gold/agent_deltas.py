"""agent_round_deltas: Social RL feedback vectors with round-over-round deltas per agent.

The computed deltas sit next to the deltas the source reports in its policy adaptations, so a
disagreement between the two (a source bug, or a skipped round) is visible in `deltas_agree`.
"""

from __future__ import annotations

import polars as pl

from pipelines.schemas import conform, polars_schema
from pipelines.schemas.gold import AgentRoundDeltas

TOLERANCE = 1e-6
PAIRS = (
    ("engagement", "engagement_delta", "reported_engagement_delta"),
    ("theoretical_alignment", "alignment_delta", "reported_alignment_delta"),
    ("contribution_value", "contribution_delta", "reported_contribution_delta"),
)


def build_agent_round_deltas(agent_rounds: pl.DataFrame, episodes: pl.DataFrame) -> pl.DataFrame:
    experiments = episodes.select("episode_id", experiment_id="group_id")
    rounds = (
        agent_rounds.join(experiments, on="episode_id", how="left")
        .with_columns(pl.col("experiment_id").fill_null(pl.col("episode_id")))
        .sort("experiment_id", "agent_id", "round_number")
    )
    by_agent = ["experiment_id", "agent_id"]
    rounds = rounds.with_columns(
        previous_round_number=pl.col("round_number").shift(1).over(by_agent),
        # Rounded: 0.6 - 0.1 is 0.49999999999999994 in floats, not a delta anyone reported.
        **{
            delta: (pl.col(value) - pl.col(value).shift(1).over(by_agent)).round(9)
            for value, delta, _ in PAIRS
        },
    )
    comparisons = [
        pl.when(pl.col(reported).is_not_null() & pl.col(delta).is_not_null()).then(
            (pl.col(reported) - pl.col(delta)).abs() <= TOLERANCE
        )
        for _, delta, reported in PAIRS
    ]
    # A pair with nothing to compare does not vote; a row with nothing to compare at all stays null.
    any_compared = pl.any_horizontal([c.is_not_null() for c in comparisons])
    agree = pl.all_horizontal([c.fill_null(True) for c in comparisons])
    rounds = rounds.with_columns(deltas_agree=pl.when(any_compared).then(agree))
    keep = list(polars_schema(AgentRoundDeltas))
    return conform(rounds.select(keep), polars_schema(AgentRoundDeltas)).collect()
