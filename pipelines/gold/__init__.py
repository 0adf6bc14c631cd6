"""Gold: rewards with provenance, episode outcomes, quality signals, agent-round deltas.

Pure Polars over the silver tables; no Dagster here (assets/gold wraps `build_gold`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

from pipelines.gold.agent_deltas import build_agent_round_deltas
from pipelines.gold.outcomes import build_episode_outcomes
from pipelines.gold.quality import build_quality_signals
from pipelines.gold.rules import build_turn_rewards
from pipelines.schemas.gold import GOLD_MODELS
from pipelines.sources.base import dumps
from pipelines.storage import tables as stored
from pipelines.storage.engine import engine_digest
from pipelines.storage.fingerprint import fingerprint
from pipelines.storage.layout import Layout

GOLD_TABLES = tuple(
    t for t in GOLD_MODELS if t != "splits"
)  # splits: asset gold_splits (pipelines/splits/)
SILVER_INPUTS = ("episodes", "turns", "feedback", "decisions", "agent_rounds")


def build_gold(
    silver: Mapping[str, pl.DataFrame], params: Mapping[str, Any]
) -> dict[str, pl.DataFrame]:
    """Every gold table from the silver tables and the reward parameters (rewards.toml +
    overrides)."""
    rewards = build_turn_rewards(silver, params)
    return {
        "turn_rewards": rewards,
        "episode_outcomes": build_episode_outcomes(silver["episodes"], silver["feedback"], rewards),
        "quality_signals": build_quality_signals(silver["turns"], params.get("quality", {})),
        "agent_round_deltas": build_agent_round_deltas(silver["agent_rounds"], silver["episodes"]),
    }


def code_and_params(params: Mapping[str, Any]) -> str:
    return fingerprint([dumps(params), engine_digest()])


def gold_inputs_digest(layout: Layout, params: Mapping[str, Any]) -> str:
    """What gold is a function of: the published silver (its own inputs digest), the parameters
    and the gold code."""
    silver = stored.meta(layout, "silver", stored.INPUTS) or "no silver"
    return fingerprint([silver, code_and_params(params)])
