"""Scenario dialogs: bronze `scenario_entries` / `scenario_metadata` → silver tables.

- One episode per scenario folder id (`scenario:<scenario_id>`, grouped by scenario). When the same
  scenario lies under several state folders (a copy left in `active/` after completion), ONE file is
  chosen: the one with the most records, then the most final state; the others are listed in the
  episode attributes (`other_copies`) and stay in bronze.
- Each entry yields a moderator turn (assistant) and a user turn (user) when present, moderator
  first unless the user spoke first (`user_first`); turn_index runs across the whole scenario.
- Outcome signals become feedback on the moderator turn they judge: the entry's own moderator turn,
  else the latest earlier one (hook-logged user replies), else the episode.
- Signals about the user's reply (`user_engagement_level`, `feedback_specificity`) judge the user turn;
  every other entry signal judges the moderator turn (see ENTRY_SIGNALS for names, scales and kinds).
  Facts that are not judgements stay turn attributes: `new_strategic_context`, `provided_correction`,
  `engagement_indicators` on the user turn, `synthesis_length_words` and `checkpoint_number` on the
  moderator turn.
- A user decision becomes a decisions row; the moderator's proposal is the suggested action.
  "Followed" compares meanings, not strings: both sides are normalized (lower case, `-`/spaces → `_`)
  and mapped through DECISION_MEANINGS to re_round / proceed / accept / reject. Equal normalized
  text → followed; a decision meaning `accept` → followed, `reject` → not; two actions (re_round,
  proceed) → followed iff equal; anything else (wording not in the vocabulary) → null, never false.
  So `proceed` vs `proceed_without_reround` is followed, `re-round` vs `proceed_with_reround` too.
- Response time: the two turns of one entry share one timestamp, so the second turn's gap says
  nothing. A user turn takes `user_decision.decision_time_seconds` where known; otherwise the second
  turn of an entry has no response time (null), which the turn attributes say
  (`response_seconds`, `response_seconds_basis`) and gold's quality_signals honours.
- Corrections and revisions (for preference pairs): a user turn is a correction when the source says
  so — `signals.provided_correction` (true or false wins), else interaction_type `user_correction` or
  a response_type containing `correction` (`source_correction` attribute). A user turn answers the
  latest moderator turn before it (`answers_turn_id`); a correction corrects it (`corrects_turn_id`).
  A moderator turn REVISES an earlier one (`revises_turn_id`) when it is the next moderator message
  of the same checkpoint: same phase, same `context.checkpoint_number`, same interaction_type, not an
  answer to a user question. A reply that merely acknowledges a correction (another type, no
  checkpoint number) revises nothing.
"""

from __future__ import annotations

import polars as pl

from pipelines.config import Settings
from pipelines.sources.base import content_hash, stable_hash

SOURCE = "scenario"
STATE_RANK = {"completed": 0, "archived": 1, "active": 3}  # other states rank 2
# Decision / proposal wording (normalized: lower case, `-` and spaces → `_`) → meaning.
# `accept` = "do what the moderator proposed", `reject` = "not that", whatever the proposal was.
DECISION_MEANINGS = {
    "re_round": ["re_round", "reround", "proceed_with_reround", "proceed_with_re_round", "rerun", "re_run",
                 "redo_round", "another_round", "iterate"],
    "proceed": ["proceed", "proceed_without_reround", "proceed_without_re_round", "no_reround", "skip_reround",
                "continue", "move_on", "advance", "advance_phase", "next_phase"],
    "accept": ["accept", "accepted", "approve", "approved", "agree", "agreed", "yes", "ok", "okay",
               "follow", "follow_proposal", "proceed_as_proposed", "as_proposed"],
    "reject": ["reject", "rejected", "decline", "declined", "no", "override", "overrule"],
}
ACTIONS = ("re_round", "proceed")  # meanings that name an action (comparable with each other)
WORDING_MEANING = {word: meaning for meaning, words in DECISION_MEANINGS.items() for word in words}


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
            judged_turn_id=pl.col("moderator_turn_id").forward_fill().over("episode_id", order_by="record_index"),
            earlier_moderator_turn_id=pl.col("moderator_turn_id").forward_fill().shift(1)
            .over("episode_id", order_by="record_index"),
        )
        .with_columns(
            # The moderator turn a user reply answers: the entry's own unless the user spoke first.
            answered_turn_id=pl.when(pl.col("user_first")).then(pl.col("earlier_moderator_turn_id"))
            .otherwise(pl.col("judged_turn_id")),
        )
        .join(revisions(entries), on=["scenario_id", "record_index"], how="left")
        .pipe(with_revision_ids)
    )


def revisions(entries: pl.LazyFrame) -> pl.LazyFrame:
    """(scenario_id, record_index, revises_record): a checkpoint message that repeats an earlier
    checkpoint (same phase, checkpoint_number and interaction_type) revises the latest such one."""
    key = ["scenario_id", "phase", "checkpoint_number", "interaction_type"]
    has_mod = pl.col("moderator_text").is_not_null() | pl.col("moderator_fields").is_not_null()
    candidates = entries.filter(has_mod & ~pl.col("user_first") & pl.all_horizontal(pl.col(key).is_not_null()))
    return candidates.select(
        "scenario_id", "record_index",
        revises_record=pl.col("record_index").shift(1).over(key, order_by="record_index"),
    ).filter(pl.col("revises_record").is_not_null())


def with_revision_ids(entries: pl.LazyFrame) -> pl.LazyFrame:
    """`revises_turn_id`: the moderator turn id of the entry a revision repeats."""
    target = entries.select("scenario_id", revises_record="record_index", revises_turn_id="moderator_turn_id")
    return entries.join(target, on=["scenario_id", "revises_record"], how="left")


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


def source_correction() -> pl.Expr:
    """The source's own word on whether the user's reply corrects the moderator (null: it says nothing)."""
    response_type = pl.col("user_response_type").str.to_lowercase()
    labelled = (pl.col("interaction_type") == "user_correction") | response_type.str.contains("correction")
    flag = pl.col("provided_correction")
    return pl.when(flag.is_not_null()).then(flag).when(labelled).then(True)


def response_timing(second_in_entry: pl.Expr, recorded: pl.Expr | None = None) -> dict[str, pl.Expr]:
    """`response_seconds` / `response_seconds_basis` attributes: a recorded figure wins; the second turn of
    an entry shares the first one's timestamp, so without a figure its response time is unknown."""
    recorded = pl.lit(None, pl.Float64) if recorded is None else recorded
    basis = (pl.when(recorded.is_not_null()).then(pl.lit("decision_time_seconds"))
             .when(second_in_entry).then(pl.lit("unknown")))
    return {"response_seconds": recorded, "response_seconds_basis": basis}


def build_turns(entries: pl.LazyFrame) -> pl.LazyFrame:
    context = {"interaction_type": pl.col("interaction_type"), "phase": pl.col("phase"),
               "round": pl.col("round"), "file": pl.col("file"), "locator": pl.col("locator")}
    both = pl.col("moderator_turn_id").is_not_null() & pl.col("user_turn_id").is_not_null()
    moderator = entries.filter(pl.col("moderator_turn_id").is_not_null()).select(
        turn_id=pl.col("moderator_turn_id"), episode_id="episode_id",
        turn_index=pl.col("moderator_turn_index"), role=pl.lit("assistant"),
        native_role=pl.lit("moderator"), text=pl.col("moderator_text"), ts="ts",
        attributes=json_object({**context, "message_type": pl.col("moderator_message_type"),
                                "checkpoint_number": pl.col("checkpoint_number"),
                                "synthesis_length_words": pl.col("synthesis_length_words"),
                                "revises_turn_id": pl.col("revises_turn_id"),
                                **response_timing(both & pl.col("user_first"))},
                               {"fields": pl.col("moderator_fields")}),
    )
    correction = source_correction()
    user = entries.filter(pl.col("user_turn_id").is_not_null()).select(
        turn_id=pl.col("user_turn_id"), episode_id="episode_id",
        turn_index=pl.col("user_turn_index"), role=pl.lit("user"),
        native_role=pl.lit("user"), text=pl.col("user_text"), ts="ts",
        attributes=json_object({**context, "response_type": pl.col("user_response_type"),
                                "answers_turn_id": pl.col("answered_turn_id"),
                                "source_correction": correction,
                                "corrects_turn_id": pl.when(correction).then(pl.col("answered_turn_id")),
                                "new_strategic_context": pl.col("new_strategic_context"),
                                **response_timing(both & ~pl.col("user_first"), pl.col("decision_time_seconds"))},
                               {"engagement_indicators": pl.col("engagement_indicators"),
                                "fields": pl.col("user_fields")}),
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


# Entry signals: (name = bronze column, scale, source kind, judged turn). `moderator`: the moderator turn
# the entry judges; `user`: the entry's user turn (signals about the reply itself). Either falls back
# to the episode. A label that is a number ("0.8") also gets value_num (scale [0,1] when inside it).
ENTRY_SIGNALS = (
    ("user_validated", "bool", "human", "moderator"),
    ("validated_output", "bool", "human", "moderator"),
    ("user_satisfaction_score", "[0,1]", "human", "moderator"),
    ("expressed_satisfaction", "bool", "human", "moderator"),
    ("correction_magnitude", "category", "system", "moderator"),
    ("moderator_effectiveness", "category", "self", "moderator"),
    ("checkpoint_timing", "category", "self", "moderator"),
    ("question_quality", "category", "self", "moderator"),
    ("checkpoint_successful", "bool", "outcome", "moderator"),
    ("iteration_triggered", "bool", "outcome", "moderator"),
    ("user_engagement_level", "category", "system", "user"),
    ("feedback_specificity", "category", "system", "user"),
)


def _label_number(value: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    number = value.str.strip_chars().cast(pl.Float64, strict=False)
    scale = pl.when(number.is_between(0.0, 1.0)).then(pl.lit("[0,1]")).when(number.is_not_null()).then(
        pl.lit("number")).otherwise(pl.lit("category"))
    return number, scale


def entry_feedback(entries: pl.LazyFrame) -> pl.LazyFrame:
    frames = []
    for name, scale, kind, about in ENTRY_SIGNALS:
        value = pl.col(name)
        numeric = scale != "category"
        number, label_scale = _label_number(value)
        judged = pl.col("judged_turn_id") if about == "moderator" else pl.col("user_turn_id")
        frames.append(entries.filter(value.is_not_null()).select(
            "episode_id", "record_index", turn_id=judged, name=pl.lit(name),
            value_num=value.cast(pl.Float64) if numeric else number,
            value_text=pl.lit(None, pl.String) if numeric else value,
            scale=pl.lit(scale) if numeric else label_scale, source_kind=pl.lit(kind), observed_at="ts",
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


def meaning(wording: pl.Expr) -> pl.Expr:
    """re_round / proceed / accept / reject, or null for wording outside DECISION_MEANINGS."""
    return _normalized(wording).replace_strict(WORDING_MEANING, default=None, return_dtype=pl.String)


def followed_proposal(decision: pl.Expr, proposal: pl.Expr) -> pl.Expr:
    """Did the decision follow the proposal, by meaning (see the module docstring); null when unknown."""
    decided, proposed = meaning(decision), meaning(proposal)
    return (
        pl.when(proposal.is_null() | decision.is_null()).then(pl.lit(None, pl.Boolean))
        .when(_normalized(decision) == _normalized(proposal)).then(True)
        .when(decided == "accept").then(True)
        .when(decided == "reject").then(False)
        .when(decided.is_in(ACTIONS) & proposed.is_in(ACTIONS)).then(decided == proposed)
    )


def build_decisions(entries: pl.LazyFrame) -> pl.LazyFrame:
    context_hash = pl.col("context").map_elements(content_hash, return_dtype=pl.String)
    return entries.filter(pl.col("user_decision").is_not_null()).select(
        decision_id=hashed("decision", "episode_id", "record_index"),
        episode_id="episode_id", turn_id="user_turn_id", actor_id=pl.lit(None, pl.String),
        actor_type=pl.lit("human"), action="user_decision", reasoning="decision_reasoning",
        context_hash=context_hash, suggested_action="proposed_action",
        suggestion_followed=followed_proposal(pl.col("user_decision"), pl.col("proposed_action")),
        ts="ts",
        attributes=json_object(
            {"moderator_turn_id": pl.col("moderator_turn_id"),
             "decision_meaning": meaning(pl.col("user_decision")),
             "proposal_meaning": meaning(pl.col("proposed_action")),
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
