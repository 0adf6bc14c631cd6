"""Every decision of the `decision` source as one row (`decision_index`), and the filters of
`turnlake decision list` (in `filters`).

Its prompt is the one the release holds: built by the release's prompt builder, chat-shaped, and
with the names each episode knows redacted by the release's own per-episode redaction
(pipelines/privacy/known_name_redaction.py), under the same `[privacy.redaction] kinds`.

A decision is *rated* when it has at least one outcome signal: a `rating` or
`was_good_decision` feedback row (from the source's own `outcome` or a later rating).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

import polars as pl

from pipelines.exports.datasets.chat_shape import shape_prompts
from pipelines.exports.datasets.decisions import decision_prompts
from pipelines.privacy.known_name_redaction import names_to_redact, redact_known_names
from pipelines.privacy.known_names import known_names

OUTCOME_SIGNALS = ("rating", "was_good_decision")
# What `turnlake decision list` shows, in this order.
LIST_COLUMNS = (
    "decision_id",
    "ts",
    "session_id",
    "actor_id",
    "actor_name",
    "actor_type",
    "domain",
    "action",
    "confidence",
    "suggested_action",
    "n_ratings",
    "outcome_reward",
)


def _rating_counts(feedback: pl.DataFrame) -> pl.DataFrame:
    outcome = feedback.filter(
        (pl.col("target") == "decision") & pl.col("name").is_in(OUTCOME_SIGNALS)
    )
    return outcome.group_by("decision_id").agg(
        n_ratings=(pl.col("name") == "rating").sum().cast(pl.Int64),
        n_outcome_signals=pl.len().cast(pl.Int64),
    )


def as_released(
    prompts: pl.DataFrame, silver: Mapping[str, pl.DataFrame], kinds: Collection[str]
) -> pl.DataFrame:
    """`decision_prompts` rows chat-shaped, with the names each episode of `silver` knows redacted
    in their `prompt` as the release redacts them (`kinds`: `[privacy.redaction] kinds`). `silver`
    whole, not only the decisions shown: an episode knows the names of all its rows."""
    shaped = shape_prompts(prompts, "prompt")
    names = names_to_redact(known_names(dict(silver)), kinds)
    return redact_known_names(shaped, ["prompt"], shaped.get_column("episode_id"), names)[0]


def decision_index(
    silver: dict[str, pl.DataFrame], gold: dict[str, pl.DataFrame], kinds: Collection[str]
) -> pl.DataFrame:
    """One row per decision: the prompt the release holds (`as_released`) beside the columns
    `list` filters and shows, sorted by time then id."""
    prompts = as_released(decision_prompts(silver, gold), silver, kinds)
    sessions = silver["episodes"].select("episode_id", session_id="native_id")
    attrs = pl.col("attributes")
    return (
        prompts.join(sessions, on="episode_id", how="left")
        .join(_rating_counts(silver["feedback"]), on="decision_id", how="left")
        .with_columns(
            actor_name=attrs.str.json_path_match("$.actor_name"),
            native_actor_type=attrs.str.json_path_match("$.native_actor_type"),
            domain=attrs.str.json_path_match("$.domain"),
            n_ratings=pl.col("n_ratings").fill_null(0),
            rated=pl.col("n_outcome_signals").fill_null(0) > 0,
            outcome_reward=pl.col("reward"),
        )
        .sort(["ts", "decision_id"], nulls_last=True)
    )
