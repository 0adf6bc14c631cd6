"""`preference`: prompt / chosen / rejected pairs (TRL DPOTrainer), from three kinds of evidence (`pair_kind`):

- `correction`: a scenario user corrects the moderator. rejected = the latest moderator answer before the
  correction, chosen = the first moderator answer after it; prompt = the conversation before the rejected
  answer. A correction is a user turn gold flags `is_correction` (lexicon) or the source labels
  `user_correction`. Caveat: the chosen answer was written knowing the correction, the prompt does not hold it.
- `override`: a human overrode a companion AI's suggestion. chosen = the human's action, rejected = the
  suggestion, both as action-only JSON (the suggestion has no text); prompt = the decision context.
- `rated_alternatives`: one prompt (same prompt_hash) with differently rewarded completions in kto:
  chosen = the best rewarded, rejected = the worst.
"""

from __future__ import annotations

import polars as pl

from pipelines.exports.datasets.common import (
    MESSAGES,
    as_messages,
    messages_text,
    prefixes,
    single,
    visible_turns,
)
from pipelines.exports.datasets.decisions import completion_json, decision_prompts

CORRECTION_SOURCES = ("scenario",)


def correction_turns(turns: pl.DataFrame, quality: pl.DataFrame | None) -> pl.DataFrame:
    """User turns that correct the assistant: lexicon flag from gold, or the source's own label."""
    labelled = pl.col("attributes").str.json_path_match("$.interaction_type") == "user_correction"
    flagged = pl.col("is_correction").fill_null(False)
    users = turns.filter(pl.col("role") == "user")
    if quality is not None:
        users = users.join(quality.select("turn_id", "is_correction"), on="turn_id", how="left")
    else:
        users = users.with_columns(is_correction=pl.lit(None, pl.Boolean))
    return users.filter(labelled.fill_null(False) | flagged)


def correction_pairs(silver: dict[str, pl.DataFrame], gold: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """(rejected, chosen) assistant turns around each correction; several corrections between the same two
    answers give one pair."""
    meta = silver["episodes"].filter(pl.col("source").is_in(CORRECTION_SOURCES)).select("episode_id")
    turns = visible_turns(silver["turns"]).join(meta, on="episode_id")
    fixes = correction_turns(turns, gold.get("quality_signals")).select(
        "episode_id", pl.col("turn_index").alias("fix_index"), pl.col("turn_id").alias("fix_id"))
    answers = turns.filter(pl.col("role") == "assistant").select("episode_id", "turn_index", "turn_id", "text")
    around = fixes.join(answers, on="episode_id").group_by("episode_id", "fix_index", "fix_id").agg(
        pl.col("turn_index").filter(pl.col("turn_index") < pl.col("fix_index")).max().alias("rejected_index"),
        pl.col("turn_index").filter(pl.col("turn_index") > pl.col("fix_index")).min().alias("chosen_index"),
    ).drop_nulls(["rejected_index", "chosen_index"])
    pairs = around.group_by("episode_id", "rejected_index", "chosen_index").agg(
        pl.col("fix_id").sort().alias("evidence_turn_ids"))
    text = answers.select("episode_id", "turn_index", "turn_id", "text")
    pairs = (pairs.join(text.rename({"turn_index": "rejected_index", "turn_id": "rejected_turn_id",
                                     "text": "rejected_text"}), on=["episode_id", "rejected_index"])
             .join(text.rename({"turn_index": "chosen_index", "turn_id": "chosen_turn_id",
                                "text": "chosen_text"}), on=["episode_id", "chosen_index"])
             .filter(pl.col("rejected_text") != pl.col("chosen_text")))
    targets = pairs.select(pl.col("rejected_turn_id").alias("target_id"), "episode_id",
                           pl.col("rejected_index").alias("turn_index"), viewer=pl.lit(None, pl.String))
    prompts = as_messages(prefixes(turns, targets, inclusive=False), pl.col("role"), pl.col("text"))
    return pairs.join(prompts.rename({"target_id": "rejected_turn_id", "messages": "prompt"}),
                      on="rejected_turn_id").select(
        "episode_id", "prompt",
        single("assistant", pl.col("chosen_text")).cast(MESSAGES).alias("chosen"),
        single("assistant", pl.col("rejected_text")).cast(MESSAGES).alias("rejected"),
        "chosen_turn_id", "rejected_turn_id", "evidence_turn_ids",
        pair_kind=pl.lit("correction"),
    )


def _really_overridden() -> pl.Expr:
    """A human whose companion suggestion was not followed (the source's `wasFollowed`, else the actions
    compared case-insensitively) and whose action differs from it: `posted` vs `POSTED` is no override."""
    differs = pl.col("action").str.strip_chars().str.to_lowercase() != (
        pl.col("suggested_action").str.strip_chars().str.to_lowercase())
    return (pl.col("actor_type") == "human") & pl.col("suggestion_followed").eq(False) & differs.fill_null(False)


def _not_rated_bad() -> pl.Expr:
    """The outcome does not rate the human's choice bad: reward ≥ 0, or no outcome recorded at all (the
    override is then the only evidence, as seed 004's meta-learning intends). An outcome that gave no reward
    (scale unknown, contradicting wasGoodDecision) may be bad: no pair on a guess."""
    return (pl.col("reward") >= 0) | (pl.col("reward").is_null() & ~pl.col("has_outcome"))


def override_pairs(silver: dict[str, pl.DataFrame], gold: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """Human action (chosen) over the companion's overridden suggestion (rejected), unless the outcome rates
    the human's choice bad. `reward_chosen` = the decision's reward (null if unrated); `reward_rejected` is
    null: the suggestion itself was never carried out, so never rated."""
    rows = decision_prompts(silver, gold).filter(_really_overridden() & _not_rated_bad())
    return rows.select(
        "episode_id", "prompt",
        single("assistant", completion_json(pl.col("action"))).cast(MESSAGES).alias("chosen"),
        single("assistant", completion_json(pl.col("suggested_action"))).cast(MESSAGES).alias("rejected"),
        "decision_id",
        pl.col("reward").alias("reward_chosen"), pl.lit(None, pl.Float64).alias("reward_rejected"),
        "reward_rule", "feedback_ids",
        pair_kind=pl.lit("override"),
    )


def rated_alternative_pairs(kto: pl.DataFrame, episodes: pl.DataFrame) -> pl.DataFrame:
    """Best vs worst rewarded completion of one prompt within one group, where reward and text differ.

    Only within a group: a pair built from two groups would carry one group's text into the other's split."""
    keys = ["group_id", "_prompt_text"]
    kto = kto.join(episodes.select("episode_id", "group_id"), on="episode_id")
    # Every column that can tie is a tie-breaker: the pair must not depend on input row order.
    ranked = kto.with_columns(_text=pl.col("completion").list.first().struct.field("content")).sort(
        "reward", "turn_id", "decision_id", "reward_rule", "_text", "episode_id", nulls_last=True)
    best = ranked.group_by(keys, maintain_order=True).agg(pl.all().last())
    worst = ranked.group_by(keys, maintain_order=True).agg(pl.all().first())
    pairs = best.join(worst, on=keys, suffix="_rejected").filter(
        (pl.col("reward") > pl.col("reward_rejected")) & (pl.col("_text") != pl.col("_text_rejected")))
    return pairs.select(
        "episode_id", "prompt", pl.col("completion").alias("chosen"), pl.col("completion_rejected").alias("rejected"),
        pl.col("turn_id").alias("chosen_turn_id"), pl.col("turn_id_rejected").alias("rejected_turn_id"),
        pl.col("reward").alias("reward_chosen"), "reward_rejected",
        pl.concat_list("feedback_ids", "feedback_ids_rejected").list.unique().list.sort().alias("feedback_ids"),
        pl.concat_str("reward_rule", "reward_rule_rejected", separator=",").alias("reward_rule"),
        pair_kind=pl.lit("rated_alternatives"),
    )


def build_preference(silver: dict[str, pl.DataFrame], gold: dict[str, pl.DataFrame], kto: pl.DataFrame) -> pl.DataFrame:
    """All preference pairs; `_prompt_text` is the canonical JSON of the prompt (hashed by the caller)."""
    frames = [correction_pairs(silver, gold), override_pairs(silver, gold), rated_alternative_pairs(kto, silver["episodes"])]
    return pl.concat(frames, how="diagonal_relaxed").with_columns(_prompt_text=messages_text("prompt"))
