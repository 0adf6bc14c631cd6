"""Tiny silver / gold frames for the export dataset tests."""

from __future__ import annotations

import hashlib

import orjson
import polars as pl

from pipelines.schemas import conform, polars_schema
from pipelines.schemas.gold import GOLD_MODELS
from tests.unit._gold_helpers import silver_frame

SILVER = ("episodes", "turns", "feedback", "decisions", "contexts", "agent_rounds")


def gold_frame(table: str, rows: list[dict]) -> pl.DataFrame:
    schema = polars_schema(GOLD_MODELS[table])
    if not rows:
        return pl.DataFrame(schema=schema)
    keys = list(dict.fromkeys(k for row in rows for k in row))
    return conform(pl.DataFrame(rows, schema={k: schema[k] for k in keys}), schema).collect()


def episode(eid: str, source: str, group: str | None = None, **kw) -> dict:
    return {
        "episode_id": eid,
        "source": source,
        "native_id": eid,
        "group_id": group or eid,
        "n_turns": 0,
        "source_file": "f",
        **kw,
    }


def turn(
    eid: str, i: int, role: str, text: str, actor: str | None = None, internal: bool = False, **kw
) -> dict:
    return {
        "turn_id": f"{eid}#{i}",
        "episode_id": eid,
        "turn_index": i,
        "role": role,
        "text": text,
        "actor_id": actor,
        "internal": internal,
        **kw,
    }


def reward(target: str, target_id: str, eid: str, value: float, rule: str = "r@1", **kw) -> dict:
    return {
        "reward_id": f"{rule}:{target}:{target_id}",
        "episode_id": eid,
        "target": target,
        "target_id": target_id,
        "reward": value,
        "feedback_ids": [f"fb-{target_id}"],
        "n_signals": 1,
        "aggregation": "single",
        "reward_rule": rule,
        "rule_inputs": "{}",
        **kw,
    }


def tables(gold: dict[str, list[dict]] | None = None, **silver: list[dict]) -> tuple[dict, dict]:
    s = {name: silver_frame(name, silver.get(name, [])) for name in SILVER}
    g = {
        name: gold_frame(name, (gold or {}).get(name, []))
        for name in ("turn_rewards", "quality_signals")
    }
    return s, g


def all_train(silver: dict[str, pl.DataFrame], **overrides: str) -> pl.DataFrame:
    groups = silver["episodes"]["group_id"].unique().sort()
    return pl.DataFrame({"group_id": groups}).with_columns(
        split=pl.col("group_id").replace_strict(overrides, default="train", return_dtype=pl.String)
    )


def context(ctx: dict) -> dict:
    text = orjson.dumps(ctx, option=orjson.OPT_SORT_KEYS).decode()
    return {
        "context_hash": hashlib.sha256(text.encode()).hexdigest(),
        "context": text,
        "n_bytes": len(text),
    }
