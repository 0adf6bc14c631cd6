"""What the social_rl silver modules share: constants, bronze access, small expressions."""

from __future__ import annotations

import polars as pl

SOURCE = "social_rl"
DECIMALS = 12  # float noise like 0.19999999999999998 is rounded away
SCORES = ("engagement", "theoretical_alignment", "contribution_value")


def json_object(**columns: pl.Expr) -> pl.Expr:
    return pl.struct(**columns).struct.json_encode()


def role_prefix(agent_id: pl.Expr) -> pl.Expr:
    """`Worker+Alice` → `Worker`; ids without the Role+Name form have no prefix."""
    return pl.when(agent_id.str.contains("+", literal=True)).then(
        agent_id.str.split("+").list.first()
    )


def adaptations(rounds: pl.LazyFrame) -> pl.LazyFrame:
    """One row per policy adaptation of a kept round, with its position in the round file."""
    return (
        rounds.filter(pl.col("policy_adaptations").list.len() > 0)
        .select(
            "episode_id",
            "run_dir",
            "policy_adaptations",
            adaptation_index=pl.int_ranges(
                0, pl.col("policy_adaptations").list.len(), dtype=pl.Int64
            ),
        )
        .explode("policy_adaptations", "adaptation_index")
        .unnest("policy_adaptations")
    )


def agent_roles(rounds: pl.LazyFrame) -> pl.LazyFrame:
    """Role of each agent of a run as its adaptations state it (for ids without a prefix)."""
    return (
        adaptations(rounds)
        .filter(pl.col("agent_id").is_not_null() & pl.col("role").is_not_null())
        .group_by("run_dir", "agent_id")
        .agg(adapted_role=pl.col("role").sort().first())
    )
