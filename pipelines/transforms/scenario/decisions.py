"""Scenario decisions and contexts: a user decision, the moderator's proposal and whether it was
followed.

- A user decision becomes a decisions row; the moderator's proposal is the suggested action.
  "Followed" compares meanings, not strings: both sides are normalized (lower case, `-`/spaces →
  `_`) and mapped through DECISION_MEANINGS to re_round / proceed / accept / reject. Equal
  normalized text → followed; a decision meaning `accept` → followed, `reject` → not; two actions
  (re_round, proceed) → followed iff equal; anything else (wording not in the vocabulary) → null,
  never false. So `proceed` vs `proceed_without_reround` is followed, `re-round` vs
  `proceed_with_reround` too.
"""

from __future__ import annotations

import polars as pl

from pipelines.sources.base import sha256_hex
from pipelines.transforms.scenario.common import json_object
from pipelines.transforms.stable_ids import json_literal, json_number, json_string, stable_hash_expr

# Decision / proposal wording (normalized: lower case, `-` and spaces → `_`) → meaning.
# `accept` = "do what the moderator proposed", `reject` = "not that", whatever the proposal was.
DECISION_MEANINGS = {
    "re_round": [
        "re_round",
        "reround",
        "proceed_with_reround",
        "proceed_with_re_round",
        "rerun",
        "re_run",
        "redo_round",
        "another_round",
        "iterate",
    ],
    "proceed": [
        "proceed",
        "proceed_without_reround",
        "proceed_without_re_round",
        "no_reround",
        "skip_reround",
        "continue",
        "move_on",
        "advance",
        "advance_phase",
        "next_phase",
    ],
    "accept": [
        "accept",
        "accepted",
        "approve",
        "approved",
        "agree",
        "agreed",
        "yes",
        "ok",
        "okay",
        "follow",
        "follow_proposal",
        "proceed_as_proposed",
        "as_proposed",
    ],
    "reject": ["reject", "rejected", "decline", "declined", "no", "override", "overrule"],
}
ACTIONS = ("re_round", "proceed")  # meanings that name an action (comparable with each other)
WORDING_MEANING = {word: meaning for meaning, words in DECISION_MEANINGS.items() for word in words}


def _normalized(expr: pl.Expr) -> pl.Expr:
    return expr.str.to_lowercase().str.strip_chars().str.replace_all(r"[\s\-]+", "_")


def meaning(wording: pl.Expr) -> pl.Expr:
    """re_round / proceed / accept / reject, or null for wording outside DECISION_MEANINGS."""
    return _normalized(wording).replace_strict(
        WORDING_MEANING, default=None, return_dtype=pl.String
    )


def followed_proposal(decision: pl.Expr, proposal: pl.Expr) -> pl.Expr:
    """Did the decision follow the proposal, by meaning (see the module docstring); null when
    unknown."""
    decided, proposed = meaning(decision), meaning(proposal)
    return (
        pl.when(proposal.is_null() | decision.is_null())
        .then(pl.lit(None, pl.Boolean))
        .when(_normalized(decision) == _normalized(proposal))
        .then(True)
        .when(decided == "accept")
        .then(True)
        .when(decided == "reject")
        .then(False)
        .when(decided.is_in(ACTIONS) & proposed.is_in(ACTIONS))
        .then(decided == proposed)
    )


def build_decisions(entries: pl.LazyFrame) -> pl.LazyFrame:
    context_hash = sha256_hex(pl.col("context"))
    return entries.filter(pl.col("user_decision").is_not_null()).select(
        decision_id=stable_hash_expr(
            json_literal("decision"), json_string("episode_id"), json_number("record_index")
        ),
        episode_id="episode_id",
        turn_id="user_turn_id",
        actor_id=pl.lit(None, pl.String),
        actor_type=pl.lit("human"),
        action="user_decision",
        reasoning="decision_reasoning",
        context_hash=context_hash,
        suggested_action="proposed_action",
        suggestion_followed=followed_proposal(pl.col("user_decision"), pl.col("proposed_action")),
        ts="ts",
        attributes=json_object(
            {
                "moderator_turn_id": pl.col("moderator_turn_id"),
                "decision_meaning": meaning(pl.col("user_decision")),
                "proposal_meaning": meaning(pl.col("proposed_action")),
                "significance_evaluation": pl.col("significance_evaluation"),
                "moderator_reasoning": pl.col("moderator_reasoning"),
                "decision_time_seconds": pl.col("decision_time_seconds"),
                "decision_confidence": pl.col("decision_confidence"),
                "interaction_type": pl.col("interaction_type"),
            },
        ),
    )


def build_contexts(entries: pl.LazyFrame) -> pl.LazyFrame:
    return (
        entries.filter(pl.col("context").is_not_null())
        .select("context")
        .unique()
        .select(
            context_hash=sha256_hex(pl.col("context")),
            context="context",
            n_bytes=pl.col("context").str.len_bytes().cast(pl.Int64),
        )
    )
