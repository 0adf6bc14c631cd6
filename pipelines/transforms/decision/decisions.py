"""The silver rows cut from kept decisions: `turns` (each decision that posted a response, in
time order within its session; a human's turn is the user's), `decisions` (one per decision, its
storage and context details in `attributes`) and `contexts` (full contexts and system prompts,
content-addressed)."""

from __future__ import annotations

import polars as pl


def turns(decisions: pl.DataFrame) -> pl.DataFrame:
    posted = decisions.filter(pl.col("response_content").str.len_chars() > 0)
    posted = posted.sort(["episode_id", "ts", "sequence_number", "decision_id"], nulls_last=True)
    return posted.select(
        turn_id=pl.col("episode_id")
        + "#"
        + pl.int_range(pl.len()).over("episode_id").cast(pl.String),
        episode_id="episode_id",
        turn_index=pl.int_range(pl.len(), dtype=pl.Int64).over("episode_id"),
        role=pl.when(pl.col("actor_kind") == "human")
        .then(pl.lit("user"))
        .otherwise(pl.lit("assistant")),
        native_role="actor_type",
        actor_id="actor_id",
        text="response_content",
        ts="ts",
        internal=pl.lit(False),
        attributes=pl.struct("decision_id", "actor_name", "action").struct.json_encode(),
        decision_id="decision_id",
    )


def decisions_table(decisions: pl.DataFrame) -> pl.DataFrame:
    attributes = pl.struct(
        "system_prompt_hash",
        native_actor_type="actor_type",
        actor_name="actor_name",
        domain="domain",
        trigger_event_id="trigger_event_id",
        context_id="context_id",
        sequence_number="sequence_number",
        model_used="model_used",
        decision_details="decision_details",
        companion_suggestion="companion_suggestion",
        metadata="metadata",
        rag_context_encoding="rag_context_encoding",
        source_file="file",
        locator="locator",
        file_kind="file_kind",
        extra="extra",
        dataset="dataset",
        suggestion_followed_from="suggestion_followed_from",
        alternatives="alternatives",
        consensus="consensus",
        follow_up="follow_up",
        long_term_outcome="long_term_outcome",
    ).struct.json_encode()
    return decisions.select(
        "decision_id",
        "episode_id",
        "turn_id",
        "actor_id",
        actor_type="actor_kind",
        action="action",
        candidates="candidates",
        confidence="confidence",
        reasoning="reasoning",
        context_hash="context_hash",
        suggested_action="suggested_action",
        suggestion_followed="suggestion_followed",
        ts="ts",
        attributes=attributes,
    )


def contexts(decisions: pl.DataFrame) -> pl.DataFrame:
    full = decisions.select("context_hash", "context")
    prompts = decisions.select(context_hash="system_prompt_hash", context="prompt_context")
    return (
        pl.concat([full, prompts])
        .drop_nulls("context_hash")
        .unique("context_hash", keep="first", maintain_order=True)
        .with_columns(n_bytes=pl.col("context").str.len_bytes().cast(pl.Int64))
    )
