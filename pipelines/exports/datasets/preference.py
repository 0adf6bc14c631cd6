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
release's trainability check (pipelines/release/trainability.py) rejects a pair that prefers the
lower known reward, and one whose `chosen_prompt_hash` and `rejected_prompt_hash` differ.
"""

from __future__ import annotations

import polars as pl

from pipelines.exports.datasets.common import (
    MESSAGES,
    as_messages,
    messages_text,
    prefixes,
    sha256_hex,
    single,
    visible_turns,
)
from pipelines.exports.datasets.decisions import completion_json, decision_prompts
from pipelines.exports.datasets.trees import hh_pairs, sibling_rank_pairs

CORRECTION_SOURCES = ("scenario",)
CORRECTION_RULE = "scenario_outcome"  # the reward rule whose rewards order a correction pair


def correction_turns(turns: pl.DataFrame) -> pl.DataFrame:
    """User turns the source itself marks as corrections (silver attribute `source_correction`, from
    `signals.provided_correction`, interaction_type `user_correction` or a response_type containing
    `correction`), with the moderator turn each corrects (`corrects_turn_id`). The text lexicon of
    quality_signals never counts here: it fires on praise ("This is actually great")."""
    attribute = pl.col("attributes").str.json_path_match
    return turns.filter(
        (pl.col("role") == "user") & (attribute("$.source_correction") == "true")
    ).with_columns(corrects_turn_id=attribute("$.corrects_turn_id"))


def revised_answers(turns: pl.DataFrame) -> pl.DataFrame:
    """Assistant turns that revise an earlier answer to the same question (silver
    `revises_turn_id`: the next message of the same scenario checkpoint)."""
    return (
        turns.filter(pl.col("role") == "assistant")
        .with_columns(revises_turn_id=pl.col("attributes").str.json_path_match("$.revises_turn_id"))
        .filter(pl.col("revises_turn_id").is_not_null())
    )


def correction_pairs(
    silver: dict[str, pl.DataFrame], gold: dict[str, pl.DataFrame]
) -> pl.DataFrame:
    """(rejected, chosen) = (a corrected moderator answer, the moderator's revised answer to the
    same question).

    A pair needs all three: a correction the source labels (`correction_turns`), the moderator
    turn it corrects, and a later revision of that turn written after the correction
    (`revised_answers`). The next moderator message is NOT a chosen answer: it replies to a
    different context (the correction itself), and a reply that merely acknowledges the
    correction answers no earlier prompt. No revised answer → no pair. Several corrections of one
    answer give one pair (`evidence_turn_ids`). `reward_chosen` / `reward_rejected` are the
    scenario_outcome rewards of the two turns (null when unknown); a pair whose chosen answer is
    rewarded lower than its rejected one is dropped (the data contradicts the preference)."""
    meta = (
        silver["episodes"].filter(pl.col("source").is_in(CORRECTION_SOURCES)).select("episode_id")
    )
    turns = visible_turns(silver["turns"]).join(meta, on="episode_id")
    fixes = correction_turns(turns).select(
        "episode_id", "corrects_turn_id", fix_id="turn_id", fix_index="turn_index"
    )
    answers = turns.filter(pl.col("role") == "assistant").select("turn_id", "turn_index", "text")
    revisions = revised_answers(turns).select(
        chosen_turn_id="turn_id",
        chosen_index="turn_index",
        chosen_text="text",
        rejected_turn_id="revises_turn_id",
    )
    pairs = (
        fixes.join(
            answers.rename(
                {
                    "turn_id": "rejected_turn_id",
                    "turn_index": "rejected_index",
                    "text": "rejected_text",
                }
            ),
            left_on="corrects_turn_id",
            right_on="rejected_turn_id",
        )
        .rename({"corrects_turn_id": "rejected_turn_id"})
        .join(revisions, on="rejected_turn_id")
        .filter(
            (pl.col("chosen_index") > pl.col("fix_index"))
            & (pl.col("rejected_text") != pl.col("chosen_text"))
        )
        .group_by(
            "episode_id",
            "rejected_turn_id",
            "rejected_index",
            "rejected_text",
            "chosen_turn_id",
            "chosen_text",
        )
        .agg(pl.col("fix_id").sort().alias("evidence_turn_ids"))
    )
    rewards = scenario_rewards(gold.get("turn_rewards"))
    pairs = (
        pairs.join(
            rewards.rename(
                {
                    "turn_id": "chosen_turn_id",
                    "reward": "reward_chosen",
                    "feedback_ids": "chosen_feedback_ids",
                    "reward_rule": "chosen_rule",
                }
            ),
            on="chosen_turn_id",
            how="left",
        )
        .join(
            rewards.rename(
                {
                    "turn_id": "rejected_turn_id",
                    "reward": "reward_rejected",
                    "feedback_ids": "rejected_feedback_ids",
                    "reward_rule": "rejected_rule",
                }
            ),
            on="rejected_turn_id",
            how="left",
        )
        .filter(~(pl.col("reward_chosen") < pl.col("reward_rejected")).fill_null(False))
    )
    targets = pairs.select(
        pl.col("rejected_turn_id").alias("target_id"),
        "episode_id",
        pl.col("rejected_index").alias("turn_index"),
        viewer=pl.lit(None, pl.String),
    )
    prompts = as_messages(prefixes(turns, targets, inclusive=False), pl.col("role"), pl.col("text"))
    return pairs.join(
        prompts.rename({"target_id": "rejected_turn_id", "messages": "prompt"}),
        on="rejected_turn_id",
    ).select(
        "episode_id",
        "prompt",
        single("assistant", pl.col("chosen_text")).cast(MESSAGES).alias("chosen"),
        single("assistant", pl.col("rejected_text")).cast(MESSAGES).alias("rejected"),
        "chosen_turn_id",
        "rejected_turn_id",
        "evidence_turn_ids",
        "reward_chosen",
        "reward_rejected",
        pl.concat_list(
            pl.col("chosen_feedback_ids").fill_null([]),
            pl.col("rejected_feedback_ids").fill_null([]),
        )
        .list.unique()
        .list.sort()
        .alias("feedback_ids"),
        reward_rule=pl.coalesce("chosen_rule", "rejected_rule"),
        pair_kind=pl.lit("correction"),
    )


def scenario_rewards(turn_rewards: pl.DataFrame | None) -> pl.DataFrame:
    """turn_id → the scenario_outcome reward of a moderator turn, with its rule and feedback ids."""
    columns = {
        "turn_id": pl.String,
        "reward": pl.Float64,
        "reward_rule": pl.String,
        "feedback_ids": pl.List(pl.String),
    }
    if turn_rewards is None:
        return pl.DataFrame(schema=columns)
    rows = turn_rewards.filter(
        pl.col("reward_rule").str.starts_with(f"{CORRECTION_RULE}@")
        & pl.col("turn_id").is_not_null()
    )
    return rows.select(list(columns)).unique("turn_id", keep="first")


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
    best = ranked.group_by(keys, maintain_order=True).agg(pl.all().last())
    worst = ranked.group_by(keys, maintain_order=True).agg(pl.all().first())
    pairs = best.join(worst, on=keys, suffix="_rejected").filter(
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
        .list.sort()
        .alias("feedback_ids"),
        pl.concat_str("reward_rule", "reward_rule_rejected", separator=",").alias("reward_rule"),
        pair_kind=pl.lit("rated_alternatives"),
    )


def build_preference(
    silver: dict[str, pl.DataFrame], gold: dict[str, pl.DataFrame], kto: pl.DataFrame
) -> pl.DataFrame:
    """All preference pairs; `_prompt_text` is the canonical JSON of the prompt (hashed by the
    caller).

    `kto`: every rated row, neutral ones included (a 0 beats a −1)."""
    frames = [
        correction_pairs(silver, gold),
        override_pairs(silver, gold),
        rated_alternative_pairs(kto, silver["episodes"]),
        sibling_rank_pairs(silver, gold),
        hh_pairs(silver),
    ]
    return pl.concat(frames, how="diagonal_relaxed").with_columns(
        _prompt_text=messages_text("prompt")
    )
