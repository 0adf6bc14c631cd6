"""`dialogue` bronze → silver: episodes, turns, feedback and silver quarantine (pure Polars).

Cross-file rules live here: the same conversation in two files is kept once (identical) or the
later file's copy wins (different: the others are `duplicate_conflict`); an event delivered twice
becomes one feedback row; events are resolved against the kept conversations with each dataset's
`turn_index` base.

Split unit: a conversation, unless a person links several: then the conversations linked by a
shared person are one group, named after the earliest of them. A person is a user turn's actor and,
with `[splits] link_raters` (the default), a rater (`user_id` of feedback events).
"""

from __future__ import annotations

import polars as pl

from pipelines.config.settings import Settings
from pipelines.schemas import bronze_table
from pipelines.transforms.dialogue import conversations as conv
from pipelines.transforms.dialogue import feedback as fb
from pipelines.transforms.dialogue.common import CONVERSATIONS, EVENTS, conformed


def to_silver(
    bronze: dict[str, pl.LazyFrame],
    settings: Settings,
    quality_ranges: pl.LazyFrame | None = None,
    people_groups: pl.LazyFrame | pl.DataFrame | None = None,
) -> dict[str, pl.LazyFrame]:
    """Silver of these bronze rows. `quality_ranges` and `people_groups` (`units.unit_evidence`):
    the per-dataset quality evidence and the rater-linked split groups of the whole corpus when
    this bronze is only part of it."""
    kept, conversation_conflicts = conv.dedup_conversations(bronze_table(bronze, CONVERSATIONS))
    events, event_conflicts = fb.dedup_events(bronze_table(bronze, EVENTS))
    resolved = fb.resolve(events, kept, settings)
    feedback = _feedback(kept, resolved, quality_ranges)
    turns = conformed(conv.turns(kept), "turns")
    quarantine = pl.concat(
        [
            conformed(q, "quarantine")
            for q in (conversation_conflicts, event_conflicts, fb.rejected(resolved))
        ]
    )
    return {
        "episodes": conv.grouped_by_people(
            conformed(conv.episodes(kept), "episodes"),
            turns,
            feedback,
            settings.splits.link_raters,
            people_groups,
        ).sort("episode_id"),
        "turns": turns.sort("episode_id", "turn_index"),
        "feedback": feedback.sort("feedback_id"),
        "quarantine": quarantine.sort("file", "locator"),
    }


def _feedback(
    kept: pl.LazyFrame, resolved: pl.LazyFrame, quality_ranges: pl.LazyFrame | None
) -> pl.LazyFrame:
    return pl.concat(
        [
            conformed(conv.quality_feedback(kept, quality_ranges), "feedback"),
            conformed(fb.feedback_rows(resolved), "feedback"),
        ]
    )


def rater_group_inputs(
    kept: pl.LazyFrame, bronze: dict[str, pl.LazyFrame], settings: Settings
) -> list[pl.LazyFrame]:
    """What the split groups `to_silver` makes with `[splits] link_raters` are made from, for
    `conversations.people_groups_of` over the (whole) bronze, passed to a transform of part of
    the corpus (units.py): the kept conversations `kept` (`conversations.dedup_conversations` of
    `bronze`'s) as units, and their raters. User turns carry no actor in this source
    (`conversations.turns`), so raters are the only people linking conversations: the groups need
    neither the turns nor the feedback rows, only the accepted events' raters
    (`feedback.rater_links`)."""
    events, _ = fb.dedup_events(bronze_table(bronze, EVENTS))
    episodes = conformed(conv.episodes(kept), "episodes")
    return conv.people_group_inputs(episodes, fb.rater_links(fb.resolve(events, kept, settings)))
