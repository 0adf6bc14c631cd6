"""Scenario dialogs: bronze `scenario_entries` / `scenario_metadata` → silver tables.

- One episode per scenario folder id (`scenario:<scenario_id>`, grouped by scenario). When the same
  scenario lies under several state folders (a copy left in `active/` after completion), ONE file is
  chosen: the one with the most records, then the most final state; the others are listed in the
  episode attributes (`other_copies`) and stay in bronze.
- Each entry yields a moderator turn (assistant) and a user turn (user) when present, moderator
  first unless the user spoke first (`user_first`); turn_index runs across the whole scenario.
- Outcome signals become feedback on the moderator turn they judge: the entry's own moderator turn,
  else the latest earlier one (hook-logged user replies), else the episode.
- A user decision becomes a decisions row; the moderator's proposal is the suggested action.
"""

from __future__ import annotations

import polars as pl

from pipelines.config import Settings
from pipelines.sources.base import content_hash, stable_hash

SOURCE = "scenario"
STATE_RANK = {"completed": 0, "archived": 1, "active": 3}  # other states rank 2
# Decisions that mean "do what the moderator proposed", whatever the proposal was.
ACCEPT_WORDS = ["accept", "accepted", "approve", "approved", "agree", "agreed", "yes", "ok",
                "follow", "follow_proposal", "proceed_as_proposed"]


def to_silver(bronze: dict[str, pl.LazyFrame], settings: Settings) -> dict[str, pl.LazyFrame]:
    chosen = choose_files(bronze["scenario_entries"], bronze["scenario_metadata"])
    entries = with_turn_positions(
        bronze["scenario_entries"].join(chosen.select("scenario_id", "file"),
                                        on=["scenario_id", "file"], how="semi")
    )
    metadata = final_metadata(bronze["scenario_metadata"], chosen)
    turns = build_turns(entries)
    return {
        "episodes": build_episodes(chosen, entries, metadata, turns),
        "turns": turns,
        "feedback": pl.concat([entry_feedback(entries), metadata_feedback(metadata)], how="diagonal"),
        "decisions": build_decisions(entries),
        "contexts": build_contexts(entries),
    }


# ---------------------------------------------------------------- helpers


def json_object(fields: dict[str, pl.Expr], raw: dict[str, pl.Expr] | None = None) -> pl.Expr:
    """A JSON object text from plain columns plus columns that already hold JSON text."""
    encoded = pl.struct(**fields).struct.json_encode()
    if not raw:
        return encoded
    pieces: list[pl.Expr] = [encoded.str.strip_suffix("}")]
    for name, expr in raw.items():
        pieces += [pl.lit(f',"{name}":'), expr.fill_null("null")]
    return pl.concat_str([*pieces, pl.lit("}")])


def hashed(kind: str, *columns: str) -> pl.Expr:
    """Deterministic id: stable_hash of a kind tag and the given columns' values."""
    return pl.struct(columns).map_elements(
        lambda row: stable_hash(kind, *row.values()), return_dtype=pl.String
    )


def episode_id() -> pl.Expr:
    return pl.concat_str([pl.lit(f"{SOURCE}:"), pl.col("scenario_id")])


def _normalized(expr: pl.Expr) -> pl.Expr:
    return expr.str.to_lowercase().str.strip_chars().str.replace_all(r"[\s\-]+", "_")


# ---------------------------------------------------------------- files and entries


def choose_files(entries: pl.LazyFrame, metadata: pl.LazyFrame) -> pl.LazyFrame:
    """One file per scenario: most records, then most final state, then path."""
    keys = ["scenario_id", "file", "state"]
    per_file = (
        pl.concat([entries.select(keys), metadata.select(keys)])
        .group_by(keys)
        .agg(pl.len().alias("n_records"))
        .with_columns(rank=pl.col("state").replace_strict(STATE_RANK, default=2, return_dtype=pl.Int64))
        .sort(["scenario_id", "n_records", "rank", "file"], descending=[False, True, False, False])
    )
    return per_file.group_by("scenario_id", maintain_order=True).agg(
        pl.col("file").first(),
        pl.col("state").first(),
        pl.col("file").slice(1).alias("other_copies"),
    )


def with_turn_positions(entries: pl.LazyFrame) -> pl.LazyFrame:
    """Adds episode_id and the turn_index / turn_id of each entry's moderator and user turns."""
    has_mod = pl.col("moderator_text").is_not_null() | pl.col("moderator_fields").is_not_null()
    has_user = pl.col("user_text").is_not_null() | pl.col("user_fields").is_not_null()
    n_mod, n_user = has_mod.cast(pl.Int64), has_user.cast(pl.Int64)
    before = (n_mod + n_user).cum_sum().over("episode_id", order_by="record_index") - (n_mod + n_user)
    mod_index = before + pl.when(pl.col("user_first")).then(n_user).otherwise(0)
    user_index = before + pl.when(pl.col("user_first")).then(0).otherwise(n_mod)

    def turn_id(index: pl.Expr, present: pl.Expr) -> pl.Expr:
        return pl.when(present).then(pl.concat_str([pl.col("episode_id"), pl.lit("#"), index.cast(pl.String)]))

    return (
        entries.with_columns(episode_id=episode_id())
        .with_columns(moderator_turn_index=pl.when(has_mod).then(mod_index),
                      user_turn_index=pl.when(has_user).then(user_index))
        .with_columns(moderator_turn_id=turn_id(pl.col("moderator_turn_index"), has_mod),
                      user_turn_id=turn_id(pl.col("user_turn_index"), has_user))
        .with_columns(
            judged_turn_id=pl.col("moderator_turn_id").forward_fill().over("episode_id", order_by="record_index")
        )
    )


def final_metadata(metadata: pl.LazyFrame, chosen: pl.LazyFrame) -> pl.LazyFrame:
    """The last metadata object of each scenario's chosen file."""
    return (
        metadata.join(chosen.select("scenario_id", "file"), on=["scenario_id", "file"], how="semi")
        .sort("record_index")
        .group_by("scenario_id", maintain_order=True)
        .last()
        .with_columns(episode_id=episode_id())
    )


# ---------------------------------------------------------------- silver tables


def build_turns(entries: pl.LazyFrame) -> pl.LazyFrame:
    context = {"interaction_type": pl.col("interaction_type"), "phase": pl.col("phase"),
               "round": pl.col("round"), "file": pl.col("file"), "locator": pl.col("locator")}
    moderator = entries.filter(pl.col("moderator_turn_id").is_not_null()).select(
        turn_id=pl.col("moderator_turn_id"), episode_id="episode_id",
        turn_index=pl.col("moderator_turn_index"), role=pl.lit("assistant"),
        native_role=pl.lit("moderator"), text=pl.col("moderator_text"), ts="ts",
        attributes=json_object({**context, "message_type": pl.col("moderator_message_type")},
                               {"fields": pl.col("moderator_fields")}),
    )
    user = entries.filter(pl.col("user_turn_id").is_not_null()).select(
        turn_id=pl.col("user_turn_id"), episode_id="episode_id",
        turn_index=pl.col("user_turn_index"), role=pl.lit("user"),
        native_role=pl.lit("user"), text=pl.col("user_text"), ts="ts",
        attributes=json_object({**context, "response_type": pl.col("user_response_type")},
                               {"fields": pl.col("user_fields")}),
    )
    return pl.concat([moderator, user]).with_columns(
        actor_id=pl.lit(None, pl.String), internal=pl.lit(False)
    )


def build_episodes(chosen: pl.LazyFrame, entries: pl.LazyFrame, metadata: pl.LazyFrame,
                   turns: pl.LazyFrame) -> pl.LazyFrame:
    times = pl.concat([entries.select("scenario_id", "ts"), metadata.select("scenario_id", "ts")])
    span = times.group_by("scenario_id").agg(started_at=pl.col("ts").min(), ended_at=pl.col("ts").max())
    claimed = entries.filter(pl.col("entry_scenario_id") != pl.col("scenario_id")).group_by(
        "scenario_id").agg(claimed_ids=pl.col("entry_scenario_id").unique().sort())
    counts = turns.group_by("episode_id").agg(n_turns=pl.len().cast(pl.Int64))
    meta = metadata.select("scenario_id", "scenario_successful", meta_json="metadata")
    successful = pl.col("scenario_successful")
    end_reason = (
        pl.when(successful).then(pl.lit("success"))
        .when(successful.not_()).then(pl.lit("failure"))
        .when(pl.col("meta_json").is_not_null()).then(pl.lit("completed"))
        .when(pl.col("state") == "active").then(pl.lit("in_progress"))
        .otherwise(pl.col("state"))
    )
    return (
        chosen.join(span, on="scenario_id", how="left")
        .join(claimed, on="scenario_id", how="left")
        .join(meta, on="scenario_id", how="left")
        .with_columns(episode_id=episode_id())
        .join(counts, on="episode_id", how="left")
        .select(
            "episode_id", source=pl.lit(SOURCE), native_id="scenario_id", group_id="scenario_id",
            started_at="started_at", ended_at="ended_at", n_turns=pl.col("n_turns").fill_null(0),
            end_reason=end_reason, source_file="file",
            attributes=json_object(
                {"state": pl.col("state"), "other_copies": pl.col("other_copies"),
                 "claimed_scenario_ids": pl.col("claimed_ids")},
                {"metadata": pl.col("meta_json")},
            ),
        )
    )


# Outcome signals: (name, bronze column, scale, source kind). Labels stay text (value_num null).
ENTRY_SIGNALS = (
    ("user_validated", "user_validated", "bool", "human"),
    ("user_satisfaction_score", "user_satisfaction_score", "[0,1]", "human"),
    ("correction_magnitude", "correction_magnitude", "category", "system"),
    ("moderator_effectiveness", "moderator_effectiveness", "category", "self"),
)


def entry_feedback(entries: pl.LazyFrame) -> pl.LazyFrame:
    frames = []
    for name, column, scale, kind in ENTRY_SIGNALS:
        value = pl.col(column)
        numeric = scale != "category"
        frames.append(entries.filter(value.is_not_null()).select(
            "episode_id", "record_index", turn_id=pl.col("judged_turn_id"), name=pl.lit(name),
            value_num=value.cast(pl.Float64) if numeric else pl.lit(None, pl.Float64),
            value_text=pl.lit(None, pl.String) if numeric else value,
            scale=pl.lit(scale), source_kind=pl.lit(kind), observed_at="ts",
            attributes=json_object({"interaction_type": pl.col("interaction_type"),
                                    "file": pl.col("file"), "locator": pl.col("locator")}),
        ))
    return (
        pl.concat(frames)
        .with_columns(target=pl.when(pl.col("turn_id").is_null()).then(pl.lit("episode")).otherwise(pl.lit("turn")))
        .with_columns(feedback_id=hashed("feedback", "episode_id", "record_index", "turn_id", "name",
                                         "value_num", "value_text"))
        .drop("record_index")
    )


METADATA_SIGNALS = (
    ("user_satisfaction_overall", "user_satisfaction_overall", "[0,1]", "human"),
    ("scenario_successful", "scenario_successful", "bool", "outcome"),
)


def metadata_feedback(metadata: pl.LazyFrame) -> pl.LazyFrame:
    frames = [
        metadata.filter(pl.col(column).is_not_null()).select(
            "episode_id", turn_id=pl.lit(None, pl.String), target=pl.lit("episode"), name=pl.lit(name),
            value_num=pl.col(column).cast(pl.Float64), scale=pl.lit(scale), source_kind=pl.lit(kind),
            observed_at="ts", attributes=json_object({"file": pl.col("file"), "locator": pl.col("locator")}),
        )
        for name, column, scale, kind in METADATA_SIGNALS
    ]
    return pl.concat(frames).with_columns(
        feedback_id=hashed("feedback", "episode_id", "name", "value_num")
    )


def build_decisions(entries: pl.LazyFrame) -> pl.LazyFrame:
    decided, proposed = _normalized(pl.col("user_decision")), _normalized(pl.col("proposed_action"))
    followed = (decided == proposed) | decided.is_in(ACCEPT_WORDS) | (
        decided == pl.concat_str([pl.lit("proceed_with_"), proposed]))
    context_hash = pl.col("context").map_elements(content_hash, return_dtype=pl.String)
    return entries.filter(pl.col("user_decision").is_not_null()).select(
        decision_id=hashed("decision", "episode_id", "record_index"),
        episode_id="episode_id", turn_id="user_turn_id", actor_id=pl.lit(None, pl.String),
        actor_type=pl.lit("human"), action="user_decision", reasoning="decision_reasoning",
        context_hash=context_hash, suggested_action="proposed_action",
        suggestion_followed=pl.when(pl.col("proposed_action").is_not_null()).then(followed),
        ts="ts",
        attributes=json_object(
            {"moderator_turn_id": pl.col("moderator_turn_id"),
             "significance_evaluation": pl.col("significance_evaluation"),
             "moderator_reasoning": pl.col("moderator_reasoning"),
             "decision_time_seconds": pl.col("decision_time_seconds"),
             "decision_confidence": pl.col("decision_confidence"),
             "interaction_type": pl.col("interaction_type")},
        ),
    )


def build_contexts(entries: pl.LazyFrame) -> pl.LazyFrame:
    return (
        entries.filter(pl.col("context").is_not_null())
        .select("context").unique()
        .select(context_hash=pl.col("context").map_elements(content_hash, return_dtype=pl.String),
                context="context", n_bytes=pl.col("context").str.len_bytes().cast(pl.Int64))
    )
