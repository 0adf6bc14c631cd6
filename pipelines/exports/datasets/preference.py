"""`preference`: prompt / chosen / rejected pairs (TRL DPOTrainer), from three kinds of evidence
(`pair_kind`):

- `correction`: a scenario user corrects the moderator and the log holds the moderator's revised
  answer to
  the same question (see `correction_pairs`). rejected = the corrected answer, chosen = its
  revision; prompt = the conversation before the rejected answer. Caveat: the chosen answer was
  written knowing the correction, the prompt does not hold it.
- `override`: a human overrode a companion AI's suggestion. chosen = the human's action, rejected
  = the
  suggestion, both as action-only JSON (the suggestion has no text); prompt = the decision
  context.
- `rated_alternatives`: one prompt (same prompt_hash) with differently rewarded completions in
  kto:
  chosen = the best rewarded, rejected = the worst (rewards in `reward_chosen` /
  `reward_rejected`; the prompt each side answered in `chosen_prompt_hash` /
  `rejected_prompt_hash`).
- `sibling_rank`: two ranked replies to one OASST message, the better-ranked one chosen
  (trees.py).
- `hh_rlhf`: an Anthropic HH-RLHF pair as its annotators labelled it (trees.py).

Every pair kind should carry `reward_chosen` / `reward_rejected` where the rewards are known: the
release's trainability check (pipelines/release/trainability/problems.py) rejects a pair that
prefers the lower known reward, and one whose `chosen_prompt_hash` and `rejected_prompt_hash`
differ.
"""

from __future__ import annotations

import polars as pl

from pipelines.exports.datasets.common import (
    MESSAGES,
    messages_text,
    single,
)
from pipelines.exports.datasets.decisions import completion_json, decision_prompts
from pipelines.exports.datasets.preference_corrections import correction_pairs
from pipelines.exports.datasets.trees import hh_pairs, sibling_rank_pairs
from pipelines.sources.base import sha256_hex


def _really_overridden() -> pl.Expr:
    """A human whose companion suggestion was not followed (the source's `wasFollowed`, else the
    actions compared case-insensitively) and whose action differs from it: `posted` vs `POSTED`
    is no override."""
    differs = pl.col("action").str.strip_chars().str.to_lowercase() != (
        pl.col("suggested_action").str.strip_chars().str.to_lowercase()
    )
    return (
        (pl.col("actor_type") == "human")
        & pl.col("suggestion_followed").eq(False)
        & differs.fill_null(False)
    )


def _not_rated_bad() -> pl.Expr:
    """The outcome does not rate the human's choice bad: reward ≥ 0, or no outcome recorded at
    all (the override is then the only evidence, as seed 004's meta-learning intends). An outcome
    that gave no reward (scale unknown, contradicting wasGoodDecision) may be bad: no pair on a
    guess."""
    return (pl.col("reward") >= 0) | (pl.col("reward").is_null() & ~pl.col("has_outcome"))


def override_pairs(silver: dict[str, pl.DataFrame], gold: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """Human action (chosen) over the companion's overridden suggestion (rejected), unless the
    outcome rates the human's choice bad. `reward_chosen` = the decision's reward (null if
    unrated); `reward_rejected` is
    null: the suggestion itself was never carried out, so never rated."""
    rows = decision_prompts(silver, gold).filter(_really_overridden() & _not_rated_bad())
    return rows.select(
        "episode_id",
        "prompt",
        single("assistant", completion_json(pl.col("action"))).cast(MESSAGES).alias("chosen"),
        single("assistant", completion_json(pl.col("suggested_action")))
        .cast(MESSAGES)
        .alias("rejected"),
        "decision_id",
        pl.col("reward").alias("reward_chosen"),
        pl.lit(None, pl.Float64).alias("reward_rejected"),
        "reward_rule",
        "feedback_ids",
        pair_kind=pl.lit("override"),
    )


def rated_alternative_pairs(kto: pl.DataFrame, episodes: pl.DataFrame) -> pl.DataFrame:
    """Best vs worst rewarded completion of one prompt within one group, where reward and text
    differ.

    Only within a group: a pair built from two groups would carry one group's text into the
    other's split."""
    keys = ["group_id", "_prompt_text"]
    kto = kto.join(episodes.select("episode_id", "group_id"), on="episode_id")
    # Every column that can tie is a tie-breaker: the pair must not depend on input row order.
    ranked = kto.with_columns(_text=pl.col("completion").list.first().struct.field("content")).sort(
        "reward", "turn_id", "decision_id", "reward_rule", "_text", "episode_id", nulls_last=True
    )
    # one grouping gives both ends of each prompt's ranking (a group with a null key has no pair)
    ends = ranked.drop_nulls(keys).group_by(keys, maintain_order=True)
    pairs = ends.agg(pl.all().last(), pl.all().first().name.suffix("_rejected")).filter(
        (pl.col("reward") > pl.col("reward_rejected"))
        & (pl.col("_text") != pl.col("_text_rejected"))
    )
    return pairs.select(
        "episode_id",
        "prompt",
        pl.col("completion").alias("chosen"),
        pl.col("completion_rejected").alias("rejected"),
        pl.col("turn_id").alias("chosen_turn_id"),
        pl.col("turn_id_rejected").alias("rejected_turn_id"),
        pl.col("decision_id").alias("chosen_decision_id"),
        pl.col("decision_id_rejected").alias("rejected_decision_id"),
        sha256_hex(messages_text("prompt")).alias("chosen_prompt_hash"),
        sha256_hex(messages_text("prompt_rejected")).alias("rejected_prompt_hash"),
        pl.col("reward").alias("reward_chosen"),
        "reward_rejected",
        pl.concat_list("feedback_ids", "feedback_ids_rejected")
        .list.unique()
        .list.eval(pl.element().sort())
        .alias("feedback_ids"),
        pl.concat_str("reward_rule", "reward_rule_rejected", separator=",").alias("reward_rule"),
        pair_kind=pl.lit("rated_alternatives"),
    )


def build_preference(
    silver: dict[str, pl.DataFrame],
    gold: dict[str, pl.DataFrame],
    kto: pl.DataFrame,
    alternatives: bool = True,
) -> pl.DataFrame:
    """All preference pairs; `_prompt_text` is the canonical JSON of the prompt (hashed by the
    caller).

    `kto`: every rated row, neutral ones included (a 0 beats a −1). Without `alternatives` the
    rated-alternative pairs are left out: the only kind that pairs rows of two episodes (of one
    group), built apart when a group's episodes are built in chunks (release/build/units.py)."""
    frames = [
        correction_pairs(silver, gold),
        override_pairs(silver, gold),
        rated_alternative_pairs(kto if alternatives else kto.clear(), silver["episodes"]),
        sibling_rank_pairs(silver, gold),
        hh_pairs(silver),
    ]
    return pl.concat(frames, how="diagonal_relaxed").with_columns(
        _prompt_text=messages_text("prompt")
    )
