"""`kto`: rated assistant turns and rated decisions as prompt / completion / label (TRL
KTOTrainer).

label = the sign of the reward: reward > 0 desirable (true), reward < 0 undesirable (false). A
reward of exactly 0 says neither (a study step where the stance did not move), so such rows are
left out unless `[release] kto_include_neutral` (then they are labelled false: KTO has no neutral
class). Rated turns are turns gold rewards directly (dialogue feedback, scenario outcome, study
IQL step via the reply it chose); a Social RL round reward judges an agent's whole round, not one
message, so it stays in sft / rl_steps only.
"""

from __future__ import annotations

import polars as pl

from pipelines.exports.datasets.common import MESSAGES, messages_text, single
from pipelines.exports.datasets.decisions import decision_prompts


def rated_turns(sft: pl.DataFrame) -> pl.DataFrame:
    """SFT examples whose final turn has a turn-level reward, split into prompt and completion."""
    rated = sft.filter(pl.col("reward").is_not_null() & (pl.col("reward_target") == "turn"))
    return rated.select(
        "episode_id",
        "turn_id",
        pl.col("messages")
        .list.head(pl.col("messages").list.len() - 1)
        .cast(MESSAGES)
        .alias("prompt"),
        pl.col("messages").list.tail(1).cast(MESSAGES).alias("completion"),
        "reward",
        "reward_rule",
        "feedback_ids",
    ).with_columns(
        _prompt_text=messages_text("prompt"),
        kind=pl.lit("turn"),
        decision_id=pl.lit(None, pl.String),
    )


def rated_decisions(silver: dict[str, pl.DataFrame], gold: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """Decision-source decisions with an outcome reward, as prompt → JSON completion."""
    rows = decision_prompts(silver, gold).filter(pl.col("reward").is_not_null())
    return rows.select(
        "episode_id",
        "turn_id",
        "prompt",
        single("assistant", pl.col("completion_text")).cast(MESSAGES).alias("completion"),
        "reward",
        "reward_rule",
        "feedback_ids",
        "_prompt_text",
        "decision_id",
        "outcome_was_good",
    ).with_columns(kind=pl.lit("decision"))


def build_kto(
    silver: dict[str, pl.DataFrame], gold: dict[str, pl.DataFrame], sft: pl.DataFrame
) -> pl.DataFrame:
    """Every rated turn (taken from the sft examples, whatever its reward) and rated decision,
    with its label; `kto_rows` then leaves out what KTO must not see."""
    rows = pl.concat([rated_turns(sft), rated_decisions(silver, gold)], how="diagonal_relaxed")
    return rows.with_columns(label=pl.col("reward") > 0)


def kto_rows(rated: pl.DataFrame, include_neutral: bool) -> tuple[pl.DataFrame, int]:
    """The rows KTO trains on (reward 0 only with `include_neutral`), and how many were left out."""
    kept = rated if include_neutral else rated.filter(pl.col("reward") != 0)
    return kept, rated.height - kept.height
