"""Who the human subjects of the split proof are (pipelines/splits/assign.py): every person seen in
silver, and which of them the proof keeps in one split under `[splits] link_raters`. Pure: no
Dagster here."""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from pipelines.config.splits import SplitConfig
from pipelines.privacy.subjects import feedback_rater

RATER_KIND = "feedback_rater"  # a human who rated: the participant kind `link_raters` governs


def human_participants(silver: Mapping[str, pl.DataFrame]) -> pl.DataFrame:
    """episode_id, participant_id (`<source>:<id>`), kind: every human subject seen in silver.

    Study residents and dialogue/scenario users speak as `turns.role = 'user'` with an `actor_id`;
    decision humans are `decisions.actor_type = 'human'`; dialogue raters carry a `user_id` in their
    feedback attributes. Ids are namespaced by source: equal strings from two systems are not known
    to be one person.
    """
    empty = pl.DataFrame(schema={"episode_id": pl.String, "person": pl.String, "kind": pl.String})
    parts = [empty]
    if "turns" in silver:
        t = silver["turns"].filter((pl.col("role") == "user") & pl.col("actor_id").is_not_null())
        parts.append(t.select("episode_id", person="actor_id", kind=pl.lit("turn_user")))
    if "decisions" in silver:
        d = silver["decisions"].filter(
            (pl.col("actor_type") == "human") & pl.col("actor_id").is_not_null()
        )
        parts.append(d.select("episode_id", person="actor_id", kind=pl.lit("decision_human")))
    if "feedback" in silver:
        f = (
            silver["feedback"]
            .filter(pl.col("source_kind") == "human")
            .select("episode_id", person=feedback_rater())
        )
        parts.append(f.drop_nulls("person").with_columns(kind=pl.lit(RATER_KIND)))
    people = pl.concat(parts).unique()
    sources = silver["episodes"].select("episode_id", "source")
    return (
        people.join(sources, on="episode_id", how="inner")
        .select("episode_id", participant_id=pl.col("source") + ":" + pl.col("person"), kind="kind")
        .sort("participant_id", "episode_id", "kind")
    )


def checked_participants(
    participants: pl.DataFrame, config: SplitConfig | None
) -> tuple[pl.DataFrame, dict[str, int] | None]:
    """The participants whose overlap the proof checks, and (with `link_raters` off) how many
    raters it leaves out: raters then do not link conversations, so one may rate in
    several splits; every speaker and actor is still checked."""
    if config is None or config.link_raters:
        return participants, None
    is_rater = pl.col("kind") == RATER_KIND
    raters = participants.filter(is_rater).get_column("participant_id").n_unique()
    return participants.filter(~is_rater), {RATER_KIND: raters}
