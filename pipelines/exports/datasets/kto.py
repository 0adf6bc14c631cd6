"""`kto`: rated assistant turns and rated decisions as prompt / completion / label (TRL KTOTrainer).

label = reward > 0 (a neutral 0 counts as undesirable). Rated turns are turns gold rewards directly
(dialogue feedback, scenario outcome, study IQL step via the reply it chose); a Social RL round reward judges
an agent's whole round, not one message, so it stays in sft / rl_steps only.
"""

from __future__ import annotations

import polars as pl

from pipelines.exports.datasets.common import MESSAGES, single
from pipelines.exports.datasets.decisions import decision_prompts


def rated_turns(sft: pl.DataFrame) -> pl.DataFrame:
    """SFT examples whose final turn has a turn-level reward, split into prompt and completion."""
    rated = sft.filter(pl.col("reward").is_not_null() & (pl.col("reward_target") == "turn"))
    return rated.select(
        "episode_id", "turn_id",
        pl.col("messages").list.head(pl.col("messages").list.len() - 1).cast(MESSAGES).alias("prompt"),
        pl.col("messages").list.tail(1).cast(MESSAGES).alias("completion"),
        "reward", "reward_rule", "feedback_ids", "_prompt_text",
    ).with_columns(kind=pl.lit("turn"), decision_id=pl.lit(None, pl.String))


def rated_decisions(silver: dict[str, pl.DataFrame], gold: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """Decision-source decisions with an outcome reward, as prompt → JSON completion."""
    rows = decision_prompts(silver, gold).filter(pl.col("reward").is_not_null())
    return rows.select(
        "episode_id", "turn_id", "prompt",
        single("assistant", pl.col("completion_text")).cast(MESSAGES).alias("completion"),
        "reward", "reward_rule", "feedback_ids", "_prompt_text", "decision_id", "outcome_was_good",
    ).with_columns(kind=pl.lit("decision"))


def build_kto(silver: dict[str, pl.DataFrame], gold: dict[str, pl.DataFrame], sft: pl.DataFrame) -> pl.DataFrame:
    """KTO rows from rated turns (taken from the sft examples) and rated decisions."""
    rows = pl.concat([rated_turns(sft), rated_decisions(silver, gold)], how="diagonal_relaxed")
    return rows.with_columns(label=pl.col("reward") > 0)
