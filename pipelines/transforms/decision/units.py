"""`decision` silver units (pipelines/transforms/units.py): one per decision session.

Unit: `decision:<session_id>` (its episode id) for every copy of a decision record; a rating
event or replay result takes the unit of the decision it names, or `orphan:decision:<id>` when no
record has that decision (its quarantine row; when the decision arrives the row moves to its
session's unit, so the planner rebuilds both).

Links: `decision:<id>` — copies of one decision in different sessions keep one
(`copies.reconcile_copies`); `event:<event_id>` — one rating event id naming decisions of
different sessions keeps its first copy (`rating_events`).
Evidence: each rater's and each file's ratings above / below 1 (`ratings.rating_evidence`),
which settle the scale of a rating of exactly 1; linking by rater would make each dataset's
`user` rater one component. Only a rating of exactly 1 reads them (any other is settled by its
value or the setting): its rater's row and its file's row. And each session's split group
(`episodes.human_groups`: sessions sharing a human actor): a session reads its own row. Linking by
person instead made one component of most sessions (the demo's humans act in nearly all of
them), transformed again whenever a session joined it; as evidence, a session that joins a group
without renaming it leaves the others' chunks fresh.
`contexts` is content-addressed (system prompts repeat across sessions): partitions may each
write one prompt's row; build_silver keeps one per hash (equal hash ⇒ equal row).
"""

from __future__ import annotations

import polars as pl

from pipelines.config.settings import Settings
from pipelines.schemas import bronze_table
from pipelines.transforms.decision.common import RATINGS_TABLE, REPLAYS_TABLE, TABLE
from pipelines.transforms.decision.copies import reconcile_copies
from pipelines.transforms.decision.derived import actor_kind, decision_dataset
from pipelines.transforms.decision.episodes import human_groups
from pipelines.transforms.decision.ratings import evidence_rows, rating_evidence
from pipelines.transforms.units import GROUPS_SCHEMA, LINKS_SCHEMA, UNIT


def _session_unit() -> pl.Expr:
    """A session's unit, which is its episode id."""
    return pl.concat_str(pl.lit("decision:"), "session_id")


# the stored column each table's rows are read by (transforms/units.py SCAN_KEYS)
SCAN_KEYS = {TABLE: "session_id", RATINGS_TABLE: "decision_id", REPLAYS_TABLE: "decision_id"}


def unit_keys(bronze: dict[str, pl.LazyFrame], settings: Settings) -> dict[str, pl.LazyFrame]:
    records = bronze_table(bronze, TABLE).with_columns(_session_unit().alias(UNIT))
    # Copies of a decision in two sessions are linked (`decision:`): either session will do.
    session = records.group_by("decision_id").agg(pl.col(UNIT).min())
    orphan = pl.concat_str(pl.lit("orphan:decision:"), "decision_id")

    def named(table: str) -> pl.LazyFrame:
        frame = bronze_table(bronze, table)
        joined = frame.join(session, on="decision_id", how="left", maintain_order="left")
        return joined.with_columns(pl.coalesce(UNIT, orphan).alias(UNIT))

    return {
        TABLE: records,
        RATINGS_TABLE: named(RATINGS_TABLE),
        REPLAYS_TABLE: named(REPLAYS_TABLE),
    }


def unit_links(bronze: dict[str, pl.LazyFrame], settings: Settings) -> pl.LazyFrame:
    tagged = unit_keys(bronze, settings)
    records = tagged[TABLE]
    copies = records.select(UNIT, link=pl.lit("decision:") + pl.col("decision_id"))
    events = tagged[RATINGS_TABLE].select(UNIT, link=pl.lit("event:") + pl.col("event_id"))
    spanning = [f.filter(pl.col(UNIT).n_unique().over("link") > 1) for f in (copies, events)]
    return pl.concat(spanning).unique().select(unit=UNIT, link="link").cast(dict(LINKS_SCHEMA))


# What `rating_evidence` reads of the kept copy and `reconcile_copies` of every copy (which copy
# is kept does not depend on the other columns): not the contexts, the bulk of a record.
_EVIDENCE_COLUMNS = ("decision_id", "file", "locator", "ordinal", "outcome", "outcome_rating")
_EVIDENCE_COLUMNS += ("outcome_rated_by", "actor_id", "action", "confidence", "ts")
_EVIDENCE_COLUMNS += ("session_id", "actor_type")  # the split groups'


def unit_evidence(bronze: dict[str, pl.LazyFrame], settings: Settings) -> dict[str, pl.LazyFrame]:
    kept, _ = reconcile_copies(bronze_table(bronze, TABLE).select(_EVIDENCE_COLUMNS).collect())
    sessions = kept.with_columns(episode_id=_session_unit(), actor_kind=actor_kind())
    return {
        "rating_evidence": rating_evidence(kept.with_columns(dataset=decision_dataset())).lazy(),
        "human_groups": human_groups(sessions).lazy(),
    }


def unit_evidence_reads(
    bronze: dict[str, pl.LazyFrame], settings: Settings
) -> dict[str, pl.LazyFrame]:
    records = unit_keys(bronze, settings)[TABLE]
    ones = records.filter(pl.col("outcome_rating") == 1).select(UNIT, *_EVIDENCE_COLUMNS).collect()
    reads = evidence_rows(ones.with_columns(dataset=decision_dataset()), UNIT)
    sessions = records.select(UNIT, episode_id=UNIT).unique()
    return {
        "rating_evidence": reads.select(UNIT, "by", "key").unique().lazy(),
        "human_groups": sessions,
    }


def unit_groups(
    bronze: dict[str, pl.LazyFrame], settings: Settings, evidence: dict[str, pl.LazyFrame]
) -> pl.LazyFrame:
    """unit, group_id: each session's split group (`episodes.group_id`: its `human_groups`
    group, else itself); an orphan unit gives no episode and has none. The groups are the
    source's evidence (`unit_evidence`), made once per plan."""
    groups = evidence["human_groups"]
    sessions = unit_keys(bronze, settings)[TABLE].select(UNIT).unique()
    return (
        sessions.join(groups, left_on=UNIT, right_on="episode_id", how="left")
        .select(unit=UNIT, group_id=pl.coalesce("human_group", UNIT), episodes=pl.lit(1))
        .cast(dict(GROUPS_SCHEMA))
    )
