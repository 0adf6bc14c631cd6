"""`correction` preference pairs (see `preference`): a corrected moderator answer (rejected) and
the moderator's revised answer to the same question (chosen)."""

from __future__ import annotations

import polars as pl

from pipelines.exports.datasets.common import (
    MESSAGES,
    as_messages,
    prefixes,
    single,
    visible_turns,
)

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
    pairs = _with_rewards(_revised_pairs(turns), scenario_rewards(gold.get("turn_rewards")))
    return _pair_rows(pairs, _rejected_prompts(turns, pairs))


def _revised_pairs(turns: pl.DataFrame) -> pl.DataFrame:
    """One row per (corrected answer, its revision written after the correction, texts differing),
    with the correcting turns in `evidence_turn_ids`."""
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
    return (
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


def _with_rewards(pairs: pl.DataFrame, rewards: pl.DataFrame) -> pl.DataFrame:
    """Both sides' scenario rewards joined on; a pair whose chosen side is rewarded lower is
    dropped."""
    return (
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


def _rejected_prompts(turns: pl.DataFrame, pairs: pl.DataFrame) -> pl.DataFrame:
    """rejected_turn_id → prompt: the conversation before the rejected answer."""
    targets = pairs.select(
        pl.col("rejected_turn_id").alias("target_id"),
        "episode_id",
        pl.col("rejected_index").alias("turn_index"),
        viewer=pl.lit(None, pl.String),
    )
    prompts = as_messages(prefixes(turns, targets, inclusive=False), pl.col("role"), pl.col("text"))
    return prompts.rename({"target_id": "rejected_turn_id", "messages": "prompt"})


def _pair_rows(pairs: pl.DataFrame, prompts: pl.DataFrame) -> pl.DataFrame:
    """The preference columns of the correction pairs."""
    return pairs.join(prompts, on="rejected_turn_id").select(
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
        .list.eval(pl.element().sort())
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
