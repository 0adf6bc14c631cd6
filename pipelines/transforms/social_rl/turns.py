"""Round messages → turns: one per message in file order, every speaker an `agent`."""

from __future__ import annotations

import polars as pl

from pipelines.transforms.social_rl.common import json_object, role_prefix


def turns(rounds: pl.LazyFrame, roles: pl.LazyFrame) -> pl.LazyFrame:
    exploded = (
        rounds.filter(pl.col("messages").list.len() > 0)
        .select(
            "episode_id",
            "run_dir",
            "messages",
            turn_index=pl.int_ranges(0, pl.col("messages").list.len(), dtype=pl.Int64),
        )
        .explode("messages", "turn_index")
        .unnest("messages")
        .join(roles, on=["run_dir", "agent_id"], how="left")
    )
    return exploded.select(
        turn_id=pl.format("{}#{}", "episode_id", "turn_index"),
        episode_id="episode_id",
        turn_index="turn_index",
        role=pl.lit("agent"),
        native_role=pl.coalesce(role_prefix(pl.col("agent_id")), "adapted_role"),
        actor_id="agent_id",
        text="content",
        ts="ts",
        internal=pl.col("internal").fill_null(False),
        attributes=json_object(
            turn_number=pl.col("turn_number"),
            round_number=pl.col("round_number"),
            prar_cue_used=pl.col("prar_cue_used"),
            message_role=pl.col("message_role"),
            context_frame=pl.col("context_frame"),
            validation=pl.col("validation"),
            extra=pl.col("extra"),
        ),
    )
