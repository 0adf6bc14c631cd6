"""Reward rules, one module per source; importing this package registers all of them.

Whoever runs or lists the rules takes them from here (`RULES`, `run_rule`, `build_turn_rewards`),
so every rule is registered before it is looked up.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

from pipelines.gold.registry import REWARD_SCHEMA, RULES, Silver, get_rule, rule_params
from pipelines.gold.rules import (  # noqa: F401
    decision,
    dialogue,
    oasst,
    scenario,
    social_rl,
    study,
)
from pipelines.schemas import conform

__all__ = ["RULES", "build_turn_rewards", "run_rule"]


def run_rule(rule_id: str, silver: Silver, params: Mapping[str, Any]) -> pl.DataFrame:
    entry = get_rule(rule_id)
    rows = entry.fn(silver, rule_params(entry.name, params))
    rows = rows.with_columns(
        reward_rule=pl.lit(rule_id),
        reward_id=pl.format("{}:{}:{}", pl.lit(rule_id), pl.col("target"), pl.col("target_id")),
    )
    return conform(rows, REWARD_SCHEMA).collect()


def build_turn_rewards(silver: Silver, params: Mapping[str, Any]) -> pl.DataFrame:
    """Every enabled rule's rows, in one table sorted by episode, target and rule."""
    enabled = params.get("rules", {}).get("enabled", [])
    frames = [run_rule(rule_id, silver, params) for rule_id in enabled]
    table = pl.concat(frames) if frames else pl.DataFrame(schema=REWARD_SCHEMA)
    return table.sort("episode_id", "target", "target_id", "reward_rule")
