"""The reward rule registry: named, versioned functions from silver tables to reward rows.

A rule is `name@version`. Its function takes the silver tables and its parameters (the section
of rewards.toml named after it, plus the shared `aggregation` method) and returns reward rows
(columns of `TurnRewards` minus `reward_id` and `reward_rule`, which the registry adds).
Changing a formula means a new version, so a trained-on number always names the code behind it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import polars as pl

from pipelines.schemas import conform, polars_schema
from pipelines.schemas.gold import TurnRewards

Silver = Mapping[str, pl.DataFrame]
RuleFn = Callable[[Silver, dict[str, Any]], pl.DataFrame]

REWARD_SCHEMA = polars_schema(TurnRewards)


@dataclass(frozen=True)
class Rule:
    name: str
    version: int
    fn: RuleFn
    summary: str

    @property
    def rule_id(self) -> str:
        return f"{self.name}@{self.version}"


RULES: dict[str, Rule] = {}


def rule(name: str, version: int, summary: str) -> Callable[[RuleFn], RuleFn]:
    """Register `fn` as rule `name@version`."""

    def register(fn: RuleFn) -> RuleFn:
        entry = Rule(name, version, fn, summary)
        if entry.rule_id in RULES:
            raise ValueError(f"reward rule {entry.rule_id} registered twice")
        RULES[entry.rule_id] = entry
        return fn

    return register


def get_rule(rule_id: str) -> Rule:
    load_rules()
    if rule_id not in RULES:
        raise KeyError(f"unknown reward rule {rule_id!r}; known: {sorted(RULES)}")
    return RULES[rule_id]


def rule_params(rule_name: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """The rule's own section plus the shared aggregation method."""
    own = dict(params.get(rule_name, {}))
    own.setdefault("aggregation", params.get("aggregation", {}).get("method", "mean"))
    return own


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


def load_rules() -> None:
    # Importing the modules registers their rules (kept lazy to avoid import cycles).
    from pipelines.gold.rules import (  # noqa: F401
        decision,
        dialogue,
        oasst,
        scenario,
        social_rl,
        study,
    )
