"""Study silver units: one per session (`study:<session_id>`, its episode id), one per participant
file owner (`participant:<participant_id>`, else `participant-file:<file>`).

A session's copies (own file, master JSONL, completed/exit participant file) all carry its
session id, so choosing the kept copy and reporting conflicting copies stay inside one unit.
A participant row yields the person's survey answers — the last file wins among one person's
files, hence one unit per person — and `willing` feedback on every session its post-surveys
name (an answer naming no known session is an orphan in that same place); so the participant
unit is linked to those sessions (`survey:<participant unit>`). Sessions of one person are also
linked (`person:<participant>`, the episodes' split group), so a group never spans partitions.
"""

from __future__ import annotations

import polars as pl

from pipelines.config.settings import Settings
from pipelines.transforms.study import copies
from pipelines.transforms.study.signals import POST_SURVEY
from pipelines.transforms.units import GROUPS_SCHEMA, LINKS_SCHEMA, UNIT, shared_frame

SESSION_PREFIX = "study:"


def _participant_unit() -> pl.Expr:
    return pl.coalesce(
        pl.lit("participant:") + pl.col("participant_id"),
        pl.lit("participant-file:") + pl.col("file"),
    )


# the stored column each table's rows are read by (transforms/units.py SCAN_KEYS)
SCAN_KEYS = {"study_sessions": "session_id", "study_participants": "participant_id"}


def unit_keys(bronze: dict[str, pl.LazyFrame], settings: Settings) -> dict[str, pl.LazyFrame]:
    keys = {
        "study_sessions": pl.lit(SESSION_PREFIX) + pl.col("session_id"),
        "study_participants": _participant_unit(),
    }
    return {table: frame.with_columns(keys[table].alias(UNIT)) for table, frame in bronze.items()}


CHOSEN = "_chosen_sessions"  # the kept copy of each session (`unit_shared`)


def _chosen(bronze: dict[str, pl.LazyFrame]) -> pl.LazyFrame:
    return shared_frame(bronze, CHOSEN, lambda: unit_shared(bronze, None)[CHOSEN])


def unit_shared(
    bronze: dict[str, pl.LazyFrame], settings: Settings | None
) -> dict[str, pl.LazyFrame]:
    """Each session's kept copy (what its episode's group_id takes), which the person links and
    the groups read: made once per plan, not once for each."""
    chosen = copies.choose_copies(copies.rank_copies(bronze["study_sessions"]))
    return {CHOSEN: chosen.select("session_id", "participant")}


def unit_links(bronze: dict[str, pl.LazyFrame], settings: Settings) -> pl.LazyFrame:
    """`survey:<participant unit>`: a participant unit and every session its post-surveys name
    (the transform looks across units there). `person:<participant>`: the sessions of one split
    group (episodes.group_id) and that person's participant unit — not needed for the transform,
    but it keeps a split group inside one component, hence one partition (DESIGN §8)."""
    return pl.concat([_survey_links(bronze), _person_links(bronze)]).unique().cast(LINKS_SCHEMA)


def _survey_links(bronze: dict[str, pl.LazyFrame]) -> pl.LazyFrame:
    named = (
        bronze["study_participants"]
        .filter(pl.col("post_surveys").is_not_null())
        .select(
            unit=_participant_unit(),
            session=pl.col("post_surveys")
            .str.json_decode(POST_SURVEY)
            .list.eval(pl.element().struct.field("sessionId")),
        )
        .explode("session")
        .filter(pl.col("session").is_not_null())
    )
    link = pl.lit("survey:") + pl.col("unit")
    return pl.concat(
        [
            named.select("unit", link=link),
            named.select(unit=pl.lit(SESSION_PREFIX) + pl.col("session"), link=link),
        ]
    )


def _person_links(bronze: dict[str, pl.LazyFrame]) -> pl.LazyFrame:
    # The participant exactly as the episode's group_id takes it (copies.choose_copies).
    sessions = (
        _chosen(bronze)
        .filter(pl.col("participant").is_not_null())
        .select(
            unit=pl.lit(SESSION_PREFIX) + pl.col("session_id"),
            link=pl.lit("person:") + pl.col("participant"),
        )
    )
    people = (
        bronze["study_participants"]
        .filter(pl.col("participant_id").is_not_null())
        .select(unit=_participant_unit(), link=pl.lit("person:") + pl.col("participant_id"))
    )
    return pl.concat([sessions, people])


def unit_groups(
    bronze: dict[str, pl.LazyFrame], settings: Settings, evidence: dict[str, pl.LazyFrame]
) -> pl.LazyFrame:
    """unit, group_id: a session's split group is its participant (as the kept copy names it),
    else the session (`episodes.group_id`); a participant unit's is its participant, the group
    of that person's sessions."""
    sessions = _chosen(bronze).select(
        unit=pl.lit(SESSION_PREFIX) + pl.col("session_id"),
        group_id=pl.coalesce("participant", "session_id"),
        episodes=pl.lit(1),
    )
    people = (
        bronze["study_participants"]
        .filter(pl.col("participant_id").is_not_null())
        .select(unit=_participant_unit(), group_id="participant_id", episodes=pl.lit(0))
    )
    both = pl.concat([sessions.cast(dict(GROUPS_SCHEMA)), people.cast(dict(GROUPS_SCHEMA))])
    return both.unique()
