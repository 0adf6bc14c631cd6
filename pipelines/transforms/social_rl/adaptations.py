"""Policy adaptations → `decisions` (+ their trigger as a `contexts` blob) and the feedback link.

Each adaptation a round file records is one decision of the Social RL coach about one agent:
`actor_id` = the agent, `actor_type` = `coach`, `ts` = the round's last message. The adaptation of
round r is computed from the round-r feedback (against round r−1) and shapes the agent's policy
for round r+1. The action:

- documented shape: `<adaptation_type>:<cue>` (`activate_cue:…`, `deactivate_cue:…`,
  `adjust_intensity:…`), `reasoning` = its `reason`;
- deltas-only shape (`{agent_id, role, deltas{…}, round}`, what the real runner writes): the
  runner's `adapt_policy(role, deltas)` moves cue intensities and thresholds by the sign of each
  delta, so the action is `adapt_policy:` + each reported delta's sign — `engagement+`,
  `alignment-`, `contribution=` (|delta| ≤ 1e-9 is `=`), comma-separated; no reasoning.

The state the coach saw (the `contexts` blob): the agent's feedback vector in round r, the
documented `feedback_trigger` and the reported deltas. The agent's round-r feedback rows link to
the first adaptation they triggered (`feedback.decision_id`); each decision lists all of them in
`attributes.trigger_feedback_ids`.
"""

from __future__ import annotations

import orjson
import polars as pl

from pipelines.sources.base import dumps, sha256_hex
from pipelines.transforms.polars_engine import TRANSFORM_ENGINE
from pipelines.transforms.social_rl.common import DECIMALS, SCORES, adaptations, json_object

NO_CHANGE = 1e-9
DELTA_NAMES = ("engagement", "alignment", "contribution")


def _delta_sign(name: str) -> pl.Expr:
    delta = pl.col(f"{name}_delta").round(DECIMALS)
    sign = (
        pl.when(delta > NO_CHANGE)
        .then(pl.lit("+"))
        .when(delta < -NO_CHANGE)
        .then(pl.lit("-"))
        .otherwise(pl.lit("="))
    )
    return pl.when(delta.is_not_null()).then(pl.lit(name) + sign)


def action() -> pl.Expr:
    documented = pl.concat_str(
        "adaptation_type", pl.lit(":"), pl.col("cue"), ignore_nulls=True
    ).str.strip_suffix(":")
    signs = pl.concat_str([_delta_sign(n) for n in DELTA_NAMES], separator=",", ignore_nulls=True)
    from_deltas = pl.when(signs != "").then(pl.lit("adapt_policy:") + signs)
    return pl.when(pl.col("adaptation_type").is_not_null()).then(documented).otherwise(from_deltas)


def _state(row: dict) -> str:
    """The coach's state as canonical JSON (the trigger, JSON text already, is decoded)."""
    trigger = row["feedback_trigger"]
    return dumps(
        {
            "agent_id": row["agent_id"],
            "round_number": row["round_number"],
            "feedback": {s: row[s] for s in SCORES} if row["has_feedback"] else None,
            "feedback_trigger": None if trigger is None else orjson.loads(trigger),
            "deltas": {f"{n}_delta": row[f"{n}_delta"] for n in DELTA_NAMES}
            if row["has_deltas"]
            else None,
        }
    )


def _context() -> pl.Expr:
    has_deltas = pl.any_horizontal(pl.col(f"{n}_delta").is_not_null() for n in DELTA_NAMES)
    fields = ("agent_id", "round_number", *SCORES, "feedback_trigger")
    fields += tuple(f"{n}_delta" for n in DELTA_NAMES)
    return pl.struct(
        *fields,
        has_feedback=pl.any_horizontal(pl.col(s).is_not_null() for s in SCORES),
        has_deltas=has_deltas,
    ).map_elements(_state, return_dtype=pl.String)


def _adaptation_rows(rounds: pl.LazyFrame, agent_rounds: pl.LazyFrame) -> pl.LazyFrame:
    ended = rounds.select(
        "episode_id",
        file_round="round_number",
        ts=pl.col("messages").list.eval(pl.element().struct.field("ts")).list.max(),
    )
    vectors = agent_rounds.select("episode_id", "agent_id", *SCORES)
    return (
        adaptations(rounds)
        .join(ended, on="episode_id", how="left")
        .join(vectors, on=["episode_id", "agent_id"], how="left")
        .with_columns(
            decision_id=pl.format("{}#adaptation{}", "episode_id", "adaptation_index"),
            round_number=pl.coalesce("round_number", "file_round"),
            shape=pl.when(pl.col("adaptation_type").is_not_null())
            .then(pl.lit("documented"))
            .otherwise(pl.lit("deltas")),
        )
        .with_columns(context=_context())
    )


def _trigger_ids(feedback: pl.LazyFrame) -> pl.LazyFrame:
    return feedback.group_by("episode_id", "agent_id").agg(
        trigger_feedback_ids=pl.col("feedback_id").sort()
    )


def build(
    rounds: pl.LazyFrame, agent_rounds: pl.LazyFrame, feedback: pl.LazyFrame
) -> dict[str, pl.LazyFrame]:
    """decisions and contexts of the adaptations, and `feedback` with its decision links (the
    adaptations and the feedback collected once: each is read by two of them)."""
    feedback = feedback.collect(engine=TRANSFORM_ENGINE).lazy()
    rows = (
        _adaptation_rows(rounds, agent_rounds)
        .join(_trigger_ids(feedback), on=["episode_id", "agent_id"], how="left")
        .collect(engine=TRANSFORM_ENGINE)
        .lazy()
    )
    decisions = rows.select(
        "decision_id",
        "episode_id",
        turn_id=pl.lit(None, pl.String),
        actor_id="agent_id",
        actor_type=pl.lit("coach"),
        action=action(),
        reasoning="reason",
        context_hash=sha256_hex(pl.col("context")),
        ts="ts",
        attributes=json_object(
            shape=pl.col("shape"),
            role=pl.col("role"),
            adaptation_type=pl.col("adaptation_type"),
            cue=pl.col("cue"),
            round_number=pl.col("round_number"),
            adaptation_index=pl.col("adaptation_index"),
            trigger_feedback_ids=pl.col("trigger_feedback_ids"),
            extra=pl.col("extra"),
        ),
    )
    contexts = rows.select(
        context_hash=sha256_hex(pl.col("context")),
        context="context",
        n_bytes=pl.col("context").str.len_bytes().cast(pl.Int64),
    ).unique("context_hash", keep="first", maintain_order=True)
    first = (
        rows.filter(pl.col("agent_id").is_not_null())
        .sort("adaptation_index")
        .group_by("episode_id", "agent_id")
        .agg(linked=pl.col("decision_id").first())
    )
    linked = (
        feedback.join(first, on=["episode_id", "agent_id"], how="left")
        .with_columns(decision_id=pl.col("linked"))
        .drop("linked")
    )
    return {"decisions": decisions, "contexts": contexts, "feedback": linked}
