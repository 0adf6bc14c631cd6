"""Session copies → one chosen copy per session → episodes and turns.

Choosing the copy (the same session may sit in its own file, in the master JSONL and in a
completed/exit participant file): most history entries, then most IQL steps, then a copy that
names its participant, then copy kind session_file > master > completed > exit, then file path and
locator (so ties resolve the same way every run). The participant is linked from ANY copy (first
non-null in that same order); failing that, from the session id's prefix before the first `_` when
it is a UUID; failing that, the session id itself is the group so the episode still has one.

End reason is derived from the judge trail in step order, never read from a field; the first
event wins: a step judged AGREE with confidence ≥ AGREE_MIN_CONFIDENCE → agreement; a REFUSE
right after a REFUSE → refusal; the MAX_RESIDENT_TURNS-th resident message → max_turns (judge
events of that same step win over it); otherwise unknown.
"""

from __future__ import annotations

import polars as pl

from pipelines.transforms.study.common import (
    OPERATOR_ACTOR,
    ROLE_MAP,
    SOURCE,
    json_expr,
    turn_id_expr,
)

AGREE_MIN_CONFIDENCE = 0.70
REFUSALS_IN_A_ROW = 2
MAX_RESIDENT_TURNS = 15

COPY_KIND_PRIORITY = {"session_file": 0, "master": 1, "completed": 2, "exit": 3}
UUID_PREFIX = r"^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})_"


def choose_copies(sessions: pl.LazyFrame) -> pl.LazyFrame:
    """One row per session_id: the most complete copy, with `participant`, `copies`, `episode_id`."""
    ranked = sessions.with_columns(
        n_history=pl.col("history").list.len(),
        n_iql=pl.col("iql").list.len(),
        has_participant=pl.col("participant_id").is_not_null(),
        kind_rank=pl.col("copy_kind").replace_strict(COPY_KIND_PRIORITY, return_dtype=pl.Int64),
    ).sort(
        ["session_id", "n_history", "n_iql", "has_participant", "kind_rank", "file", "locator"],
        descending=[False, True, True, True, False, False, False],
    )
    linked = ranked.group_by("session_id").agg(
        copies=pl.len().cast(pl.Int64),
        any_participant=pl.col("participant_id").drop_nulls().first(),
    )
    chosen = ranked.unique("session_id", keep="first", maintain_order=True)
    return chosen.join(linked, on="session_id", how="left").with_columns(
        episode_id=pl.concat_str([pl.lit(f"{SOURCE}:"), pl.col("session_id")]),
        participant=pl.coalesce(
            pl.col("any_participant"), pl.col("session_id").str.extract(UUID_PREFIX, 1)
        ),
    )


def iql_steps(chosen: pl.LazyFrame) -> pl.LazyFrame:
    """One row per IQL step of a chosen copy, with the history positions it is tied to."""
    return (
        chosen.select("episode_id", "session_id", "participant", "file", "locator", "n_history", "iql")
        .explode("iql")
        .filter(pl.col("iql").is_not_null())
        .unnest("iql")
        .with_columns(
            # Step k answers the k-th resident message (history[2k-1]) with history[2k].
            resident_index=(2 * pl.col("turn") - 1),
            operator_index=(2 * pl.col("turn")),
        )
        .sort("episode_id", "turn")
    )


def end_reasons(chosen: pl.LazyFrame, steps: pl.LazyFrame) -> pl.LazyFrame:
    """(episode_id, end_reason) for every chosen session."""
    judged = steps.with_columns(
        previous_stance=pl.col("judge_stance").shift(1).over("episode_id")
    ).select(
        "episode_id",
        step=pl.col("turn"),
        priority=pl.lit(0, pl.Int64),
        reason=pl.when(
            (pl.col("judge_stance") == "AGREE") & (pl.col("judge_confidence") >= AGREE_MIN_CONFIDENCE)
        )
        .then(pl.lit("agreement"))
        .when((pl.col("judge_stance") == "REFUSE") & (pl.col("previous_stance") == "REFUSE"))
        .then(pl.lit("refusal")),
    )
    long_enough = chosen.filter(resident_turns() >= MAX_RESIDENT_TURNS).select(
        "episode_id",
        step=pl.lit(MAX_RESIDENT_TURNS, pl.Int64),
        priority=pl.lit(1, pl.Int64),
        reason=pl.lit("max_turns"),
    )
    first_event = (
        pl.concat([judged.filter(pl.col("reason").is_not_null()), long_enough])
        .sort("episode_id", "step", "priority")
        .group_by("episode_id", maintain_order=True)
        .agg(end_reason=pl.col("reason").first())
    )
    return chosen.select("episode_id").join(first_event, on="episode_id", how="left").with_columns(
        end_reason=pl.col("end_reason").fill_null("unknown")
    )


def resident_turns() -> pl.Expr:
    return pl.col("history").list.eval(pl.element().struct.field("role") == "resident").list.sum()


def episodes(chosen: pl.LazyFrame, steps: pl.LazyFrame) -> pl.LazyFrame:
    return chosen.join(end_reasons(chosen, steps), on="episode_id", how="left").select(
        "episode_id",
        source=pl.lit(SOURCE),
        native_id=pl.col("session_id"),
        group_id=pl.coalesce(pl.col("participant"), pl.col("session_id")),
        started_at=pl.col("created_at"),
        ended_at=pl.col("ended_at"),
        n_turns=pl.col("n_history").cast(pl.Int64),
        end_reason=pl.col("end_reason"),
        attributes=json_expr(
            character=pl.col("character"),
            conversation_type=pl.col("conversation_type"),
            persuasion_strategy=pl.col("persuasion_strategy"),
            scenario=pl.col("scenario"),
            turn_count=pl.col("turn_count"),
            copies=pl.col("copies"),
            copy_kind=pl.col("copy_kind"),
            participant_id_from=pl.col("participant_id_from"),
            extra_json=pl.col("extra"),
        ),
        source_file=pl.col("file"),
    )


def turns(chosen: pl.LazyFrame, steps: pl.LazyFrame) -> pl.LazyFrame:
    """One row per history entry; an operator reply an IQL step chose carries the step's time."""
    step_times = steps.select("episode_id", turn_index=pl.col("operator_index"), step_ts=pl.col("ts"))
    return (
        chosen.select(
            "episode_id", "participant", "history",
            turn_index=pl.int_ranges(0, pl.col("history").list.len(), dtype=pl.Int64),
        )
        .explode("history", "turn_index")
        .filter(pl.col("history").is_not_null())
        .unnest("history")
        .join(step_times, on=["episode_id", "turn_index"], how="left")
        .select(
            turn_id=turn_id_expr(pl.col("turn_index")),
            episode_id=pl.col("episode_id"),
            turn_index=pl.col("turn_index"),
            role=pl.col("role").replace_strict(ROLE_MAP, return_dtype=pl.String),
            native_role=pl.col("role"),
            actor_id=pl.when(pl.col("role") == "resident")
            .then(pl.col("participant"))
            .otherwise(pl.lit(OPERATOR_ACTOR)),
            text=pl.col("text"),
            ts=pl.col("step_ts"),
            internal=pl.lit(False),
            attributes=pl.col("extra"),
        )
    )
