"""Scenario files and entries: which file stands for a scenario, and where each entry's turns go.

- One episode per scenario folder id (`scenario:<scenario_id>`, grouped by scenario). When the same
  scenario lies under several state folders (a copy left in `active/` after completion), ONE file is
  chosen: the one with the most records, then the most final state; the others are listed in the
  episode attributes (`other_copies`) and stay in bronze.
- Each entry yields a moderator turn (assistant) and a user turn (user) when present, moderator
  first unless the user spoke first (`user_first`); turn_index runs across the whole scenario.
"""

from __future__ import annotations

import polars as pl

from pipelines.transforms.scenario.common import episode_id
from pipelines.transforms.scenario.corrections import revisions, with_revision_ids

STATE_RANK = {"completed": 0, "archived": 1, "active": 3}  # other states rank 2


def choose_files(entries: pl.LazyFrame, metadata: pl.LazyFrame) -> pl.LazyFrame:
    """One file per scenario: most records, then most final state, then path."""
    keys = ["scenario_id", "file", "state"]
    per_file = (
        pl.concat([entries.select(keys), metadata.select(keys)])
        .group_by(keys)
        .agg(pl.len().alias("n_records"))
        .with_columns(
            rank=pl.col("state").replace_strict(STATE_RANK, default=2, return_dtype=pl.Int64)
        )
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
    before = (n_mod + n_user).cum_sum().over("episode_id", order_by="record_index") - (
        n_mod + n_user
    )
    mod_index = before + pl.when(pl.col("user_first")).then(n_user).otherwise(0)
    user_index = before + pl.when(pl.col("user_first")).then(0).otherwise(n_mod)

    def turn_id(index: pl.Expr, present: pl.Expr) -> pl.Expr:
        return pl.when(present).then(
            pl.concat_str([pl.col("episode_id"), pl.lit("#"), index.cast(pl.String)])
        )

    return (
        entries.with_columns(episode_id=episode_id())
        .with_columns(
            moderator_turn_index=pl.when(has_mod).then(mod_index),
            user_turn_index=pl.when(has_user).then(user_index),
        )
        .with_columns(
            moderator_turn_id=turn_id(pl.col("moderator_turn_index"), has_mod),
            user_turn_id=turn_id(pl.col("user_turn_index"), has_user),
        )
        .with_columns(
            judged_turn_id=pl.col("moderator_turn_id")
            .forward_fill()
            .over("episode_id", order_by="record_index"),
            earlier_moderator_turn_id=pl.col("moderator_turn_id")
            .forward_fill()
            .shift(1)
            .over("episode_id", order_by="record_index"),
        )
        .with_columns(
            # The moderator turn a user reply answers: the entry's own unless the user spoke first.
            answered_turn_id=pl.when(pl.col("user_first"))
            .then(pl.col("earlier_moderator_turn_id"))
            .otherwise(pl.col("judged_turn_id")),
        )
        .join(revisions(entries), on=["scenario_id", "record_index"], how="left")
        .pipe(with_revision_ids)
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
