"""Corrections and revisions (for preference pairs): which turn a user turn answers or corrects,
and which earlier moderator turn a moderator turn revises.

- A user turn is a correction when the source says so — `signals.provided_correction` (true or
  false
  wins), else interaction_type `user_correction` or a response_type containing `correction`
  (`source_correction` attribute). A user turn answers the latest moderator turn before it
  (`answers_turn_id`); a correction corrects it (`corrects_turn_id`).
- A moderator turn REVISES an earlier one (`revises_turn_id`) when it is the next moderator
  message
  of the same checkpoint: same phase, same `context.checkpoint_number`, same interaction_type,
  not an answer to a user question. A reply that merely acknowledges a correction (another type,
  no checkpoint number) revises nothing.
"""

from __future__ import annotations

import polars as pl


def source_correction() -> pl.Expr:
    """The source's own word on whether the user's reply corrects the moderator (null: it says
    nothing)."""
    response_type = pl.col("user_response_type").str.to_lowercase()
    labelled = (pl.col("interaction_type") == "user_correction") | response_type.str.contains(
        "correction"
    )
    flag = pl.col("provided_correction")
    return pl.when(flag.is_not_null()).then(flag).when(labelled).then(True)


def revisions(entries: pl.LazyFrame) -> pl.LazyFrame:
    """(scenario_id, record_index, revises_record): a checkpoint message that repeats an earlier
    checkpoint (same phase, checkpoint_number and interaction_type) revises the latest such one."""
    key = ["scenario_id", "phase", "checkpoint_number", "interaction_type"]
    has_mod = pl.col("moderator_text").is_not_null() | pl.col("moderator_fields").is_not_null()
    candidates = entries.filter(
        has_mod & ~pl.col("user_first") & pl.all_horizontal(pl.col(key).is_not_null())
    )
    return candidates.select(
        "scenario_id",
        "record_index",
        revises_record=pl.col("record_index").shift(1).over(key, order_by="record_index"),
    ).filter(pl.col("revises_record").is_not_null())


def with_revision_ids(entries: pl.LazyFrame) -> pl.LazyFrame:
    """`revises_turn_id`: the moderator turn id of the entry a revision repeats."""
    target = entries.select(
        "scenario_id", revises_record="record_index", revises_turn_id="moderator_turn_id"
    )
    return entries.join(target, on=["scenario_id", "revises_record"], how="left")
