"""Study bronze → silver: episodes, turns, decisions, feedback and silver quarantine.

See `copies` for which copy of a session is kept and when other copies are `duplicate_conflict`,
`sessions` for how IQL steps are tied to the transcript (and quarantined when their texts do not
match it) and how the end reason is derived, and `signals` for decisions (IQL steps) and feedback
(judge stances, post-survey answers).
"""

from __future__ import annotations

import polars as pl

from pipelines.config.settings import Settings
from pipelines.schemas import conform, polars_schema, silver_schema
from pipelines.schemas.bronze.study import StudyParticipants, StudySessions
from pipelines.transforms.polars_engine import TRANSFORM_ENGINE
from pipelines.transforms.study import copies, signals
from pipelines.transforms.study import sessions as sess
from pipelines.transforms.study.common import SOURCE
from pipelines.transforms.study.sessions import AGREE_MIN_CONFIDENCE, MAX_RESIDENT_TURNS
from pipelines.transforms.study.surveys import survey_answers

__all__ = ["AGREE_MIN_CONFIDENCE", "MAX_RESIDENT_TURNS", "to_silver"]


def to_silver(
    bronze: dict[str, pl.LazyFrame], settings: Settings
) -> dict[str, pl.DataFrame | pl.LazyFrame]:
    sessions = _table(bronze, "study_sessions", polars_schema(StudySessions))
    participants = _table(bronze, "study_participants", polars_schema(StudyParticipants))

    # Collected once: every builder below reads the chosen copies and their steps.
    ranked = copies.rank_copies(sessions).collect(engine=TRANSFORM_ENGINE).lazy()
    chosen = copies.choose_copies(ranked).collect(engine=TRANSFORM_ENGINE).lazy()
    steps = sess.iql_steps(chosen).collect(engine=TRANSFORM_ENGINE).lazy()
    ends = sess.end_reasons(chosen, steps).collect(engine=TRANSFORM_ENGINE).lazy()
    turns = sess.turns(chosen, steps).collect(engine=TRANSFORM_ENGINE).lazy()
    conflicts = copies.copy_conflicts(ranked, settings.limits.raw_excerpt_chars)

    judge, judge_orphans = signals.judge_feedback(steps)
    willing, willing_orphans = signals.willing_feedback(
        participants, chosen, settings.timezone_for(SOURCE)
    )
    feedback = pl.concat(
        [conform(judge, silver_schema("feedback")), conform(willing, silver_schema("feedback"))]
    )
    rejected = (conflicts.lazy(), sess.mismatched_steps(steps), judge_orphans, willing_orphans)
    quarantine = pl.concat([conform(q, silver_schema("quarantine")) for q in rejected])
    return {
        "episodes": conform(sess.episodes(chosen, ends), silver_schema("episodes")),
        "turns": conform(turns, silver_schema("turns")),
        "decisions": conform(signals.decisions(steps, ends), silver_schema("decisions")),
        "feedback": feedback,
        "quarantine": quarantine,
        "survey_answers": conform(survey_answers(participants), silver_schema("survey_answers")),
    }


def _table(bronze: dict[str, pl.LazyFrame], name: str, schema: pl.Schema) -> pl.LazyFrame:
    frame = bronze.get(name)
    return pl.LazyFrame(schema=schema) if frame is None else frame
