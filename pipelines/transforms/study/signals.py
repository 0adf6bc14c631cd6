"""IQL steps → decisions; judge stances and post-survey answers → feedback.

Only verified steps (see `sessions`: texts agree with the turns they are tied to) are used. A judge
stance is about the resident message the step answered (the k-th, history[2k-1]); a step whose
resident message is not in the transcript cannot be tied to a turn and its stance is quarantined as
an orphan (its decision is still kept, with a null turn_id when its reply is not in the transcript
either). A post-survey `willing` answer is an
episode-level human signal; one naming a session that is not in the data is an orphan.
Post-surveys never carry the pre-study survey (which holds PII) into silver.
"""

from __future__ import annotations

import polars as pl

from pipelines.transforms.stable_ids import (
    json_literal,
    json_number,
    json_string,
    json_utc_ts,
    stable_hash_expr,
)
from pipelines.transforms.study.common import (
    OPERATOR_ACTOR,
    json_expr,
    quarantine_frame,
    ts_from_text,
    turn_id_expr,
)
from pipelines.transforms.study.sessions import verified_steps

POST_SURVEY = pl.List(
    pl.Struct(
        {
            "sessionId": pl.String,
            "conversationNumber": pl.String,
            "timestamp": pl.String,
            "willing": pl.String,
            "willingYesDetails": pl.String,
            "willingNoDetails": pl.String,
            "naturalness": pl.String,
        }
    )
)
WILLING_VALUES = {"yes": 1.0, "no": 0.0}


def decisions(steps: pl.LazyFrame, ends: pl.LazyFrame) -> pl.LazyFrame:
    """One decision per verified IQL step; `ends` = sessions.end_reasons (for `after_end`)."""
    return (
        verified_steps(steps)
        .join(ends.select("episode_id", "end_step"), on="episode_id", how="left")
        .with_columns(decision_id=_decision_id())
        .select(
            "decision_id",
            "episode_id",
            turn_id=pl.when(pl.col("operator_index").is_not_null()).then(
                turn_id_expr(pl.col("operator_index"))
            ),
            actor_id=pl.lit(OPERATOR_ACTOR),
            actor_type=pl.lit("policy"),
            action=pl.col("selected_policy"),
            candidates=pl.col("q_values").list.eval(
                pl.struct(
                    action=pl.element().struct.field("policy"),
                    value=pl.element().struct.field("value"),
                )
            ),
            ts=pl.col("ts"),
            attributes=json_expr(
                step=pl.col("turn"),
                # The step ↔ turn tie, proven by the reply's text where both sides have one.
                response_matches_turn=pl.col("operator_response") == pl.col("operator_text"),
                # A reply chosen after the judged stance that ended the session: not an RL step.
                after_end=pl.when(pl.col("turn") >= pl.col("end_step")).then(pl.lit(True)),
                extra_json=pl.col("extra"),
            ),
        )
    )


def _decision_id() -> pl.Expr:
    return stable_hash_expr(
        json_literal("study-iql-step"), json_string("session_id"), json_number("turn")
    )


def judge_feedback(steps: pl.LazyFrame) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """(feedback rows, silver quarantine rows for stances whose resident turn is missing)."""
    judged = (
        verified_steps(steps)
        .filter(pl.col("judge_stance").is_not_null())
        .with_columns(
            tied=pl.col("resident_index").is_not_null(),
            decision_id=_decision_id(),
        )
    )
    rows = judged.filter(pl.col("tied")).with_columns(
        turn_id=turn_id_expr(pl.col("resident_index"))
    )
    feedback = rows.select(
        feedback_id=stable_hash_expr(
            json_literal("judge_stance"),
            json_string("turn_id"),
            json_string("judge_stance"),
            json_number("judge_confidence"),
            json_utc_ts("ts"),
        ),
        episode_id=pl.col("episode_id"),
        turn_id=pl.col("turn_id"),
        decision_id=pl.col("decision_id"),
        target=pl.lit("turn"),
        name=pl.lit("judge_stance"),
        value_num=pl.col("judge_confidence"),
        value_text=pl.col("judge_stance"),
        scale=pl.lit("category"),
        source_kind=pl.lit("judge"),
        observed_at=pl.col("ts"),
        attributes=json_expr(reasoning=pl.col("judge_reasoning"), step=pl.col("turn")),
    )
    orphans = quarantine_frame(
        judged.filter(~pl.col("tied")).with_columns(
            locator=pl.format("{} iql_data turn {}", pl.col("locator"), pl.col("turn"))
        ),
        "orphan",
        pl.format(
            "judge stance of IQL step {} is about resident message {}, but the transcript ({} "
            "entries) has fewer resident messages",
            pl.col("turn"),
            pl.col("turn"),
            pl.col("n_history"),
        ),
        json_expr(
            stance=pl.col("judge_stance"),
            confidence=pl.col("judge_confidence"),
            reasoning=pl.col("judge_reasoning"),
        ),
    )
    return feedback, orphans


def willing_feedback(
    participants: pl.LazyFrame, chosen: pl.LazyFrame, tz: str
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """(episode-level `willing` feedback, silver quarantine rows for unknown sessions)."""
    answers = (
        participants.filter(pl.col("post_surveys").is_not_null())
        .select("file", answer=pl.col("post_surveys").str.json_decode(POST_SURVEY))
        .with_columns(position=pl.int_ranges(0, pl.col("answer").list.len()))
        .explode("answer", "position")
        .filter(pl.col("answer").is_not_null())
        .unnest("answer")
        .filter(pl.col("willing").is_not_null())
        .with_columns(locator=pl.format("post_surveys[{}]", pl.col("position")))
    )
    known = chosen.select("session_id", "episode_id")
    matched = answers.join(known, left_on="sessionId", right_on="session_id", how="inner")
    feedback = (
        matched.with_columns(
            observed_at=ts_from_text("timestamp", tz),
            willing_text=pl.col("willing").str.to_lowercase().str.strip_chars(),
        )
        .select(
            feedback_id=stable_hash_expr(
                json_literal("post_survey_willing"),
                json_string("episode_id"),
                json_string("willing_text"),
                json_string("timestamp"),
            ),
            episode_id=pl.col("episode_id"),
            target=pl.lit("episode"),
            name=pl.lit("willing"),
            value_num=pl.col("willing_text").replace_strict(
                WILLING_VALUES, default=None, return_dtype=pl.Float64
            ),
            value_text=pl.col("willing_text"),
            scale=pl.lit("bool"),
            source_kind=pl.lit("human"),
            observed_at=pl.col("observed_at"),
            attributes=json_expr(
                conversation_number=pl.col("conversationNumber"),
                naturalness=pl.col("naturalness"),
                willing_yes_details=pl.col("willingYesDetails").replace("", None),
                willing_no_details=pl.col("willingNoDetails").replace("", None),
                post_survey_file=pl.col("file"),
            ),
        )
        .sort("feedback_id", "attributes", nulls_last=True)
        .unique("feedback_id", keep="first", maintain_order=True)
    )
    orphans = quarantine_frame(
        answers.join(known, left_on="sessionId", right_on="session_id", how="anti"),
        "orphan",
        pl.format(
            "post-survey answer for session {} that is in no conversation file",
            pl.col("sessionId").fill_null("<no sessionId>"),
        ),
        json_expr(
            sessionId=pl.col("sessionId"), willing=pl.col("willing"), timestamp=pl.col("timestamp")
        ),
    )
    return feedback, orphans
