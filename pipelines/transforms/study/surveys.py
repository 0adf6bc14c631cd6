"""Survey answers (pre-survey background / personality / moral / special needs, and post-surveys)
as their own long table: one row per participant × section × question (× session for
post-surveys).

Answers that name the person (IDENTIFYING_QUESTIONS: e-mail, nickname, ...) never leave bronze.
The rest stay in silver (local data); releases leave them out unless `[privacy] include_surveys =
true`, and then only pseudonymized.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
import polars as pl

from pipelines.transforms.polars_engine import TRANSFORM_ENGINE

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


class _Answers:
    """The answers table's columns, filled one question → answer mapping at a time (a dict per
    answer, typed by Polars' row constructor, cost several times more)."""

    def __init__(self) -> None:
        self.columns: dict[str, list] = {name: [] for name in ANSWER_SCHEMA}

    def add(
        self,
        row: dict,
        session_id: str | None,
        section: str,
        answers: dict,
        skip: Callable[[str], bool],
        at: str | None,
    ) -> None:
        """The answers of `answers` (question → answer) whose question `skip` does not leave
        out."""
        questions = [q for q in answers if not skip(q)]
        n = len(questions)
        c = self.columns
        c["participant_id"] += [row["participant_id"]] * n
        c["confirmation_number"] += [row["confirmation_number"]] * n
        c["session_id"] += [session_id] * n
        c["section"] += [section] * n
        c["question"] += questions
        c["answer_text"] += [_text(answers[q]) for q in questions]
        c["answered_at_raw"] += [at] * n
        c["source_file"] += [row["file"]] * n

    def frame(self) -> pl.DataFrame:
        return pl.DataFrame(self.columns, schema=ANSWER_SCHEMA)


def _identifying(question: str) -> bool:
    return question.lower() in IDENTIFYING_QUESTIONS


def _answers(row: dict, out: _Answers) -> None:
    survey = orjson.loads(row["survey"]) if row["survey"] else {}
    if isinstance(survey, dict):
        for section in SECTIONS:
            answers = survey.get(section)
            if isinstance(answers, dict):
                out.add(row, None, section, answers, _identifying, _text(survey.get("timestamp")))
    posts = orjson.loads(row["post_surveys"]) if row["post_surveys"] else []
    for post in posts if isinstance(posts, list) else []:
        if isinstance(post, dict):
            session_id, at = _text(post.get("sessionId")), _text(post.get("timestamp"))
            out.add(row, session_id, "post_survey", post, _POST_SKIP.__contains__, at)


def survey_answers(participants: pl.LazyFrame) -> pl.DataFrame:
    """Long answers table; a participant found in several files keeps the answers of the last
    file."""
    rows = (
        participants.filter(pl.col("participant_id").is_not_null())
        .select("file", "participant_id", "confirmation_number", "survey", "post_surveys")
        .collect(engine=TRANSFORM_ENGINE)
    )
    # One row per participant file (small): per-row JSON walking is cheap here.
    answers = _Answers()
    for row in rows.iter_rows(named=True):
        _answers(row, answers)
    kept = (
        answers.frame()
        .sort("source_file")
        .unique(
            ["participant_id", "session_id", "section", "question"],
            keep="last",
            maintain_order=True,
        )
        .with_columns(answer_num=pl.col("answer_text").cast(pl.Float64, strict=False))
    )
    return kept.join(
        answer_times(kept),
        on="answered_at_raw",
        how="left",
        nulls_equal=True,
        maintain_order="left",
    ).drop("answered_at_raw")


def answer_times(answers: pl.DataFrame) -> pl.DataFrame:
    """answered_at_raw → answered_at, each distinct text parsed once (a survey's answers share
    its one timestamp: ~11 rows a text), in order of first appearance so that the format Polars
    infers from the first text is the one a parse of the whole column infers."""
    return answers.select(pl.col("answered_at_raw").unique(maintain_order=True)).with_columns(
        answered_at=pl.col("answered_at_raw").str.to_datetime(
            time_zone="UTC", strict=False, time_unit="us"
        )
    )
