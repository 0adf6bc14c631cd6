"""Gold: rewards with provenance, episode outcomes, quality signals, agent-round deltas.

Pure Polars over the silver tables; no Dagster here (assets/gold wraps `build_gold`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl

from pipelines.gold.agent_deltas import build_agent_round_deltas
from pipelines.gold.outcomes import build_episode_outcomes
from pipelines.gold.params import PARAMS
from pipelines.gold.quality import build_quality_signals
from pipelines.gold.rules import build_turn_rewards
from pipelines.partitions.assign import PARTITION
from pipelines.partitions.rows import DIGESTS_SCHEMA, GOLD_KEYS, changed, tag
from pipelines.partitions.store import DIGESTS_TABLE, chunks, previous_digests
from pipelines.schemas.gold import GOLD_MODELS
from pipelines.sources.base import dumps
from pipelines.storage import tables as stored
from pipelines.storage.fingerprint import code_digest, fingerprint, json_part
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


def _code_and_params(params: Mapping[str, Any]) -> str:
    here = Path(__file__)
    return fingerprint(
        [
            dumps(params),
            code_digest(
                here.parent, here.parents[1] / "schemas" / "gold.py", here.parents[1] / "partitions"
            ),
        ]
    )


def gold_inputs_digest(layout: Layout, params: Mapping[str, Any]) -> str:
    """What gold is a function of: the published silver (its own inputs digest), the parameters
    and the gold code."""
    silver = stored.meta(layout, "silver", stored.INPUTS) or "no silver"
    return fingerprint([silver, _code_and_params(params)])


def partition_inputs(layout: Layout, params: Mapping[str, Any]) -> pl.DataFrame:
    """One row per silver partition: what its gold is computed from (silver rows + parameters +
    code) and how many silver rows it has."""
    silver = stored.read(layout, "silver", DIGESTS_TABLE, schema=DIGESTS_SCHEMA)
    key = _code_and_params(params)
    return silver.with_columns(
        digest=pl.col("digest").map_elements(
            lambda d: fingerprint([json_part([d, key])]), return_dtype=pl.String
        )
    )


def _gold_of(layout: Layout, keys: list[str], params: Mapping[str, Any]) -> dict[str, pl.DataFrame]:
    """Gold rows of these silver partitions, each tagged with its partition."""
    silver = {
        table: stored.read(layout, "silver", table, partitions=keys, with_partition=True)
        for table in SILVER_INPUTS
    }
    places = {"episode_id": silver["episodes"].select("episode_id", PARTITION)}
    gold = build_gold({t: f.drop(PARTITION) for t, f in silver.items()}, params)
    return tag(gold, GOLD_KEYS, places)


def refresh_gold(
    layout: Layout, params: Mapping[str, Any], run_id: str
) -> tuple[dict[str, int], bool]:
    """Recompute the gold of every silver partition whose inputs changed (in chunks, so memory
    follows a chunk) and publish; rows per table and whether anything was rebuilt. (Reusing the
    published snapshot also lets its checks reuse their verdicts.)"""
    inputs = gold_inputs_digest(layout, params)
    if stored.meta(layout, "gold", stored.INPUTS) == inputs:
        return {t: stored.rows(layout, "gold", t) for t in GOLD_TABLES}, False
    wanted = partition_inputs(layout, params)
    previous = previous_digests(layout, "gold")
    stale = (
        wanted
        if previous is None
        else wanted.filter(pl.col(PARTITION).is_in(pl.Series(changed(wanted, previous)).implode()))
    )
    gone = (
        []
        if previous is None
        else sorted(set(previous.get_column(PARTITION)) - set(wanted.get_column(PARTITION)))
    )
    committed: dict[str, int] = {}
    first = True
    for keys in chunks(stale) if stale.height else iter([[]]):
        tagged = _gold_of(layout, keys, params)
        replace = None if (first and previous is None) else keys + (gone if first else [])
        for table in GOLD_TABLES:
            uri = stored.table_uri(layout, "gold", table)
            committed[table] = stored.commit_partitions(uri, tagged[table], replace)
        first = False
    meta = {stored.RUN: run_id, stored.INPUTS: inputs, PARAMS: dumps(params)}
    stored.publish(layout, "gold", {DIGESTS_TABLE: wanted}, meta, committed=committed)
    return {t: stored.rows(layout, "gold", t) for t in GOLD_TABLES}, True
