"""decision bronze → silver: episodes, turns, decisions, contexts, feedback, quarantine.

Which copy of a decision is kept (JSONL export vs SQLite database): `copies`. What each decision
adds to its row (actor kind, contexts, suggestion followed, candidates): `derived`. Turns,
decisions and contexts: `decisions`; episodes and their split unit (sessions linked by a shared
human actor): `episodes`.

Rating scale (DESIGN §3): `outcome.rating` is on 0–1 or 1–5, and a rating of exactly 1 is the top
of one and the bottom of the other. Each rating row of `feedback` records the scale settled by
evidence and how (`attributes.scale_evidence`), and whether it can be read as a reward
(`attributes.reading`); see `ratings.settle_rating_scales`. Feedback signals:
`feedback.feedback_signals`; later ratings (`turnlake decision rate`) and the rule by which a
later rating supersedes an earlier one: `rating_events`.
"""

from __future__ import annotations

import polars as pl

from pipelines.config.settings import Settings
from pipelines.schemas import bronze_table
from pipelines.transforms.decision.common import RATINGS_TABLE, REPLAYS_TABLE, TABLE
from pipelines.transforms.decision.copies import reconcile_copies
from pipelines.transforms.decision.decisions import contexts, decisions_table, turns
from pipelines.transforms.decision.derived import with_derived_columns
from pipelines.transforms.decision.episodes import episodes
from pipelines.transforms.decision.feedback import feedback_signals
from pipelines.transforms.decision.rating_events import rating_event_feedback, supersede_ratings
from pipelines.transforms.decision.ratings import settle_rating_scales
from pipelines.transforms.decision.replays import replays_table
from pipelines.transforms.polars_engine import TRANSFORM_ENGINE

__all__ = ["reconcile_copies", "to_silver"]


def to_silver(
    bronze: dict[str, pl.LazyFrame],
    settings: Settings,
    rating_evidence: pl.LazyFrame | pl.DataFrame | None = None,
    human_groups: pl.LazyFrame | pl.DataFrame | None = None,
) -> dict[str, pl.DataFrame | pl.LazyFrame]:
    """Silver of these bronze rows. `rating_evidence` and `human_groups` (`units.unit_evidence`):
    the rating-scale evidence and split groups of the whole corpus when this bronze is only part
    of it."""
    records = bronze[TABLE].collect(engine=TRANSFORM_ENGINE)
    kept, conflicts = reconcile_copies(records)
    if isinstance(rating_evidence, pl.LazyFrame):
        rating_evidence = rating_evidence.collect(engine=TRANSFORM_ENGINE)
    if isinstance(human_groups, pl.LazyFrame):
        human_groups = human_groups.collect(engine=TRANSFORM_ENGINE)
    decisions = settle_rating_scales(with_derived_columns(kept), settings, rating_evidence)
    posted = turns(decisions)
    decisions = decisions.join(
        posted.select("decision_id", "turn_id"), on="decision_id", how="left"
    )
    rated, rejected = rating_event_feedback(
        bronze_table(bronze, RATINGS_TABLE).collect(engine=TRANSFORM_ENGINE), decisions
    )
    replays, unmatched = replays_table(
        bronze_table(bronze, REPLAYS_TABLE).collect(engine=TRANSFORM_ENGINE), decisions
    )
    feedback = pl.concat([feedback_signals(decisions), rated], how="diagonal_relaxed")
    return {
        "episodes": episodes(decisions, posted, human_groups),
        "turns": posted.drop("decision_id"),
        "decisions": decisions_table(decisions),
        "contexts": contexts(decisions),
        "feedback": supersede_ratings(feedback),
        "quarantine": pl.concat([conflicts, rejected, unmatched], how="diagonal_relaxed"),
        "replays": replays,
    }
