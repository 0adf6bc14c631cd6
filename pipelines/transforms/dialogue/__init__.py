"""`dialogue` bronze → silver: episodes, turns, feedback and silver quarantine (pure Polars).

Cross-file rules live here: the same conversation in two files is kept once (identical) or the
later file's copy wins (different: the others are `duplicate_conflict`); an event delivered twice
becomes one feedback row; events are resolved against the kept conversations with each dataset's
`turn_index` base.

Split unit: a conversation, unless a rater (`user_id` of feedback events) rated several: then the
conversations linked by a shared rater are one group, named after the earliest of them.
"""

from __future__ import annotations

import polars as pl

from pipelines.config.settings import Settings
from pipelines.schemas import conform, polars_schema, silver_schema
from pipelines.schemas.bronze.dialogue import BRONZE_MODELS
from pipelines.transforms.dialogue import conversations as conv
from pipelines.transforms.dialogue import feedback as fb
from pipelines.transforms.groups import feedback_rater, person_components

CONVERSATIONS = "dialogue_conversations"
EVENTS = "dialogue_feedback_events"


def to_silver(bronze: dict[str, pl.LazyFrame], settings: Settings) -> dict[str, pl.LazyFrame]:
    kept, conversation_conflicts = conv.dedup_conversations(_bronze(bronze, CONVERSATIONS))
    events, event_conflicts = fb.dedup_events(_bronze(bronze, EVENTS))
    resolved = fb.resolve(events, kept, settings)
    feedback = pl.concat(
        [
            _conformed(conv.quality_feedback(kept), "feedback"),
            _conformed(fb.feedback_rows(resolved), "feedback"),
        ]
    )
    quarantine = pl.concat(
        [
            _conformed(q, "quarantine")
            for q in (conversation_conflicts, event_conflicts, fb.rejected(resolved))
        ]
    )
    return {
        "episodes": _grouped_by_rater(_conformed(conv.episodes(kept), "episodes"), feedback).sort(
            "episode_id"
        ),
        "turns": _conformed(conv.turns(kept), "turns").sort("episode_id", "turn_index"),
        "feedback": feedback.sort("feedback_id"),
        "quarantine": quarantine.sort("file", "locator"),
    }


def _grouped_by_rater(episodes: pl.LazyFrame, feedback: pl.LazyFrame) -> pl.LazyFrame:
    """group_id = the component of conversations sharing a human rater (see module docstring)."""
    units = episodes.select(unit="episode_id", started_at="started_at").collect()
    links = feedback.filter(pl.col("source_kind") == "human").select(
        unit="episode_id", person=feedback_rater()
    )
    components = person_components(units, links.collect()).rename(
        {"unit": "episode_id", "group": "_group"}
    )
    return (
        episodes.join(components.lazy(), on="episode_id", how="left")
        .with_columns(group_id=pl.coalesce("_group", "group_id"))
        .drop("_group")
    )


def _bronze(bronze: dict[str, pl.LazyFrame], table: str) -> pl.LazyFrame:
    frame = bronze.get(table)
    return frame if frame is not None else pl.LazyFrame(schema=polars_schema(BRONZE_MODELS[table]))


def _conformed(frame: pl.LazyFrame, table: str) -> pl.LazyFrame:
    return conform(frame, silver_schema(table))
