"""Survey answers (pre-survey background / personality / moral / special needs, and post-surveys)
as their own long table: one row per participant × section × question (× session for
post-surveys).

Answers that name the person (IDENTIFYING_QUESTIONS: e-mail, nickname, ...) never leave bronze.
The rest stay in silver (local data); releases leave them out unless `[privacy] include_surveys =
true`, and then only pseudonymized.
"""

from __future__ import annotations

from typing import Any

import orjson
import polars as pl

SECTIONS = ("background", "personality", "moral", "specialNeeds")
# Answers that name a person rather than describe them: kept out of silver altogether.
IDENTIFYING_QUESTIONS = ("email", "nickname", "name", "phone")
_POST_SKIP = {"sessionId", "participantId", "timestamp", "character", "conversationNumber"}

ANSWER_SCHEMA = pl.Schema(
    {
        "participant_id": pl.String,
        "confirmation_number": pl.String,
        "session_id": pl.String,
        "section": pl.String,
        "question": pl.String,
        "answer_text": pl.String,
        "answered_at_raw": pl.String,
        "source_file": pl.String,
    }
)


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else orjson.dumps(value).decode()


def _answers(row: dict) -> list[dict]:
    base = {
        "participant_id": row["participant_id"],
        "confirmation_number": row["confirmation_number"],
        "source_file": row["file"],
    }
    out = []
    survey = orjson.loads(row["survey"]) if row["survey"] else {}
    if isinstance(survey, dict):
        for section in SECTIONS:
            answers = survey.get(section)
            if isinstance(answers, dict):
                out += [
                    base
                    | {
                        "session_id": None,
                        "section": section,
                        "question": q,
                        "answer_text": _text(a),
                        "answered_at_raw": _text(survey.get("timestamp")),
                    }
                    for q, a in answers.items()
                    if q.lower() not in IDENTIFYING_QUESTIONS
                ]
    posts = orjson.loads(row["post_surveys"]) if row["post_surveys"] else []
    for post in posts if isinstance(posts, list) else []:
        if isinstance(post, dict):
            out += [
                base
                | {
                    "session_id": _text(post.get("sessionId")),
                    "section": "post_survey",
                    "question": q,
                    "answer_text": _text(a),
                    "answered_at_raw": _text(post.get("timestamp")),
                }
                for q, a in post.items()
                if q not in _POST_SKIP
            ]
    return out


def survey_answers(participants: pl.LazyFrame) -> pl.DataFrame:
    """Long answers table; a participant found in several files keeps the answers of the last
    file."""
    rows = (
        participants.filter(pl.col("participant_id").is_not_null())
        .select("file", "participant_id", "confirmation_number", "survey", "post_surveys")
        .collect()
    )
    # One row per participant file (small): per-row JSON walking is cheap here.
    answers = [a for row in rows.iter_rows(named=True) for a in _answers(row)]
    frame = pl.DataFrame(answers, schema=ANSWER_SCHEMA, orient="row")
    return (
        frame.sort("source_file")
        .unique(
            ["participant_id", "session_id", "section", "question"],
            keep="last",
            maintain_order=True,
        )
        .with_columns(
            answer_num=pl.col("answer_text").cast(pl.Float64, strict=False),
            answered_at=pl.col("answered_at_raw").str.to_datetime(
                time_zone="UTC", strict=False, time_unit="us"
            ),
        )
        .drop("answered_at_raw")
    )
