"""Kept session copies → IQL steps tied to the transcript → episodes (with end reason) and turns.

Tying IQL steps to the transcript: `turn` is the resident utterance count, so step k answers the
k-th resident message of `history` and its `operator_response` is the operator entry right after
that message. When the operator speaks first and roles alternate (every real file, the source
document's example) that is history[2k-1] (resident) and history[2k] (operator); history[0] is the
scripted opening, which no IQL step chose.

A step whose own texts contradict the turns it is tied to (its `resident_message` is not the k-th
resident message, or its `operator_response` is not the reply after it; compared after trimming
surrounding whitespace, a missing text on either side contradicts nothing) is quarantined as
`bad_value` (stage silver) and none of it reaches silver: no decision, no judge stance, no
timestamp. Its judge would otherwise label the wrong resident message and its reward would go to
the wrong reply. It is not re-aligned by searching for its text elsewhere: residents repeat short
replies ("okay thanks" twice in one real session), so a text search can pick the wrong turn.

End reason is derived from the judge trail of the steps that reach silver, in step order, never
read from a field; the first event wins: a step judged AGREE with confidence ≥ AGREE_MIN_CONFIDENCE
→ agreement; a REFUSE at step k right after a REFUSE at step k−1 → refusal; the
MAX_RESIDENT_TURNS-th resident message → max_turns (judge events of that same step win over it);
otherwise unknown. `end_step` (episode attributes) is the step whose judged resident message ended
the session (15 for max_turns): that message answers the reply of step end_step−1, the action the
ending is credited to (DESIGN §3). Steps from end_step on chose replies written after the outcome
was decided; their decisions carry `after_end: true`.
"""

from __future__ import annotations

import polars as pl

from pipelines.transforms.study.common import (
    OPERATOR_ACTOR,
    ROLE_MAP,
    SOURCE,
    json_expr,
    quarantine_frame,
    turn_id_expr,
)

AGREE_MIN_CONFIDENCE = 0.70
MAX_RESIDENT_TURNS = 15


def iql_steps(chosen: pl.LazyFrame) -> pl.LazyFrame:
    """One row per IQL step of a kept copy, with the history positions and texts it is tied to.

    `resident_index` is null when the transcript has fewer resident messages than the step number;
    `operator_index` is null when no operator entry follows that message; `text_matches` is false
    when the step's own texts contradict those turns."""
    steps = (
        chosen.select(
            "episode_id", "session_id", "participant", "file", "locator", "n_history", "iql"
        )
        .explode("iql")
        .filter(pl.col("iql").is_not_null())
        .unnest("iql")
    )
    tied = steps.join(resident_positions(chosen), on=["episode_id", "turn"], how="left")
    return tied.with_columns(
        text_matches=_same_text("resident_message", "resident_text")
        & _same_text("operator_response", "operator_text")
    ).sort("episode_id", "turn")


def resident_positions(chosen: pl.LazyFrame) -> pl.LazyFrame:
    """(episode_id, turn k, history index and text of the k-th resident message, and of the
    operator entry right after it)."""
    entries = (
        chosen.select(
            "episode_id",
            "history",
            index=pl.int_ranges(0, pl.col("history").list.len(), dtype=pl.Int64),
        )
        .explode("history", "index")
        .filter(pl.col("history").is_not_null())
        .select(
            "episode_id",
            "index",
            role=pl.col("history").struct.field("role"),
            text=pl.col("history").struct.field("text"),
        )
        # Not sorted: the explode leaves each episode's entries together and in index order,
        # all the shift below and the turn numbering need.
        .with_columns(
            next_role=pl.col("role").shift(-1).over("episode_id"),
            next_text=pl.col("text").shift(-1).over("episode_id"),
        )
    )
    replied = pl.col("next_role") == "operator"
    return (
        entries.filter(pl.col("role") == "resident")
        .with_columns(turn=pl.int_range(1, pl.len() + 1, dtype=pl.Int64).over("episode_id"))
        .select(
            "episode_id",
            "turn",
            resident_index=pl.col("index"),
            resident_text=pl.col("text"),
            operator_index=pl.when(replied).then(pl.col("index") + 1),
            operator_text=pl.when(replied).then(pl.col("next_text")),
        )
    )


def _same_text(step_text: str, turn_text: str) -> pl.Expr:
    a, b = pl.col(step_text).str.strip_chars(), pl.col(turn_text).str.strip_chars()
    return (a.is_null() | b.is_null() | (a == b)).fill_null(True)


def verified_steps(steps: pl.LazyFrame) -> pl.LazyFrame:
    """Steps whose texts agree with the turns they are tied to (the only ones silver uses)."""
    return steps.filter(pl.col("text_matches"))


def mismatched_steps(steps: pl.LazyFrame) -> pl.LazyFrame:
    """Silver quarantine (`bad_value`) for steps whose texts contradict the turns they are tied
    to."""
    resident_wrong = ~_same_text("resident_message", "resident_text")
    what = pl.concat_str(
        pl.when(resident_wrong).then(
            pl.format(
                "its resident_message {} is not history[{}] {} (resident message {})",
                _quoted("resident_message"),
                pl.col("resident_index"),
                _quoted("resident_text"),
                pl.col("turn"),
            )
        ),
        pl.when(~_same_text("operator_response", "operator_text")).then(
            pl.format(
                "its operator_response {} is not history[{}] {} (the reply after it)",
                _quoted("operator_response"),
                pl.col("operator_index"),
                _quoted("operator_text"),
            )
        ),
        separator="; ",
        ignore_nulls=True,
    )
    return quarantine_frame(
        steps.filter(~pl.col("text_matches")).with_columns(
            locator=pl.format("{} iql_data turn {}", pl.col("locator"), pl.col("turn"))
        ),
        "bad_value",
        pl.format(
            "IQL step {} of session {} does not match the transcript: {}; the step is left out "
            "(no decision, no judge stance, no reward), it is not re-aligned by text",
            pl.col("turn"),
            pl.col("session_id"),
            what,
        ),
        json_expr(
            turn=pl.col("turn"),
            resident_message=pl.col("resident_message"),
            operator_response=pl.col("operator_response"),
            selected_policy=pl.col("selected_policy"),
            judge_stance=pl.col("judge_stance"),
            judge_confidence=pl.col("judge_confidence"),
        ),
    )


def _quoted(column: str, limit: int = 80) -> pl.Expr:
    text = pl.col(column)
    short = (
        pl.when(text.str.len_chars() > limit)
        .then(pl.concat_str(text.str.slice(0, limit), pl.lit("…")))
        .otherwise(text)
    )
    return pl.concat_str(pl.lit('"'), short, pl.lit('"')).fill_null("(none)")


def judged(steps: pl.LazyFrame) -> pl.LazyFrame:
    """Verified steps with a judge stance about a resident message that is in the transcript:
    the judge trail that becomes feedback and decides the end reason."""
    return verified_steps(steps).filter(
        pl.col("judge_stance").is_not_null() & pl.col("resident_index").is_not_null()
    )


def end_reasons(chosen: pl.LazyFrame, steps: pl.LazyFrame) -> pl.LazyFrame:
    """(episode_id, end_reason, end_step) for every kept session; end_step null when unknown."""
    trail = (
        judged(steps)
        .sort("episode_id", "turn")
        .with_columns(
            previous_stance=pl.col("judge_stance").shift(1).over("episode_id"),
            previous_turn=pl.col("turn").shift(1).over("episode_id"),
        )
    )
    refused_twice = (
        (pl.col("judge_stance") == "REFUSE")
        & (pl.col("previous_stance") == "REFUSE")
        & (pl.col("previous_turn") == pl.col("turn") - 1)
    )
    events = trail.select(
        "episode_id",
        step=pl.col("turn"),
        priority=pl.lit(0, pl.Int64),
        reason=pl.when(
            (pl.col("judge_stance") == "AGREE")
            & (pl.col("judge_confidence") >= AGREE_MIN_CONFIDENCE)
        )
        .then(pl.lit("agreement"))
        .when(refused_twice)
        .then(pl.lit("refusal")),
    )
    long_enough = chosen.filter(resident_turns() >= MAX_RESIDENT_TURNS).select(
        "episode_id",
        step=pl.lit(MAX_RESIDENT_TURNS, pl.Int64),
        priority=pl.lit(1, pl.Int64),
        reason=pl.lit("max_turns"),
    )
    first_event = (
        pl.concat([events.filter(pl.col("reason").is_not_null()), long_enough])
        .sort("episode_id", "step", "priority")
        .group_by("episode_id", maintain_order=True)
        .agg(end_reason=pl.col("reason").first(), end_step=pl.col("step").first())
    )
    return (
        chosen.select("episode_id")
        .join(first_event, on="episode_id", how="left")
        .with_columns(end_reason=pl.col("end_reason").fill_null("unknown"))
    )


def resident_turns() -> pl.Expr:
    return pl.col("history").list.eval(pl.element().struct.field("role") == "resident").list.sum()


def episodes(chosen: pl.LazyFrame, ends: pl.LazyFrame) -> pl.LazyFrame:
    """`ends` = end_reasons(chosen, steps)."""
    return chosen.join(ends, on="episode_id", how="left").select(
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
            end_step=pl.col("end_step"),
            copies=pl.col("copies"),
            copy_kind=pl.col("copy_kind"),
            participant_id_from=pl.col("participant_id_from"),
            extra_json=pl.col("extra"),
        ),
        source_file=pl.col("file"),
    )


def turns(chosen: pl.LazyFrame, steps: pl.LazyFrame) -> pl.LazyFrame:
    """One row per history entry; an operator reply a verified IQL step chose carries the step's
    time."""
    step_times = verified_steps(steps).select(
        "episode_id", turn_index=pl.col("operator_index"), step_ts=pl.col("ts")
    )
    return (
        chosen.select(
            "episode_id",
            "participant",
            "history",
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
