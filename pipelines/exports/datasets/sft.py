"""`sft`: conversation prefixes ending in an assistant turn (TRL SFTTrainer `messages`).

One example per assistant turn (per agent message in Social RL): every visible earlier turn of
the episode plus that turn. Examples with nothing before the final turn are skipped: there is
nothing to condition on, and every such example would share one empty prompt. Social RL is seen
from the speaking agent: its own messages are `assistant`, other agents' are `user` prefixed with
their id; internal coach messages are left out (see common.visible_turns). A study session's
`scenario` (what the resident was told) opens its examples as system context; the chat shape
(chat_shape.py, applied to every dataset) does the rest.

OASST message trees: the examples of their best-ranked path (trees.py).

Left out unless `[release] sft_include_negative`: examples whose final turn has a negative reward
(supervised fine-tuning imitates every example it is given; an answer rated bad is no model
answer).
"""

from __future__ import annotations

import polars as pl

from pipelines.exports.datasets.common import (
    MESSAGES,
    agent_view_content,
    agent_view_role,
    as_messages,
    message,
    prefixes,
    rewards_by,
    visible_turns,
)
from pipelines.exports.datasets.trees import best_path_examples

CHAT_SOURCES = ("dialogue", "study", "scenario")
SCENARIO_PREFIX = "The resident's scenario: "


def chat_turns(
    turns: pl.DataFrame, episodes: pl.DataFrame, sources: tuple[str, ...]
) -> pl.DataFrame:
    """Visible turns of the given sources, with their episode's source."""
    meta = episodes.select("episode_id", "source").filter(pl.col("source").is_in(sources))
    return visible_turns(turns).join(meta, on="episode_id")


def turn_examples(turns: pl.DataFrame, episodes: pl.DataFrame) -> pl.DataFrame:
    """(target_id = turn_id, episode_id, messages) for every assistant / agent turn of the SFT
    sources."""
    chat = chat_turns(turns, episodes, CHAT_SOURCES)
    chat_targets = chat.filter(pl.col("role") == "assistant").with_columns(
        target_id=pl.col("turn_id"), viewer=pl.lit(None, pl.String)
    )
    chat_msgs = as_messages(
        prefixes(chat, chat_targets, inclusive=True), pl.col("role"), pl.col("text")
    )
    social = chat_turns(turns, episodes, ("social_rl",))
    social_targets = social.with_columns(target_id=pl.col("turn_id"), viewer=pl.col("actor_id"))
    social_msgs = as_messages(
        prefixes(social, social_targets, inclusive=True), agent_view_role(), agent_view_content()
    )
    targets = pl.concat([chat_targets, social_targets], how="diagonal").select(
        "target_id", "episode_id", "source", "turn_index", "actor_id"
    )
    examples = targets.join(pl.concat([chat_msgs, social_msgs]), on="target_id")
    examples = examples.filter(pl.col("messages").list.len() >= 2).rename({"target_id": "turn_id"})
    return with_episode_context(examples, episodes)


def with_episode_context(examples: pl.DataFrame, episodes: pl.DataFrame) -> pl.DataFrame:
    """A study session's scenario text first, as a system message (the operator's model knew it)."""
    scenario = episodes.filter(pl.col("source") == "study").select(
        "episode_id", _scenario=pl.col("attributes").str.json_path_match("$.scenario")
    )
    out = examples.join(scenario, on="episode_id", how="left")
    system = pl.concat_list(message("system", pl.lit(SCENARIO_PREFIX) + pl.col("_scenario")))
    has_scenario = pl.col("_scenario").is_not_null() & (pl.col("_scenario") != "")
    messages = (
        pl.when(has_scenario).then(pl.concat_list(system, "messages")).otherwise(pl.col("messages"))
    )
    return out.with_columns(messages.cast(MESSAGES).alias("messages")).drop("_scenario")


def _agent_round_rewards(turn_rewards: pl.DataFrame) -> pl.DataFrame:
    return turn_rewards.filter(pl.col("target") == "agent_round").select(
        "episode_id", pl.col("agent_id").alias("actor_id"), "reward", "reward_rule", "feedback_ids"
    )


def build_sft(silver: dict[str, pl.DataFrame], gold: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """SFT examples with the reward gold gives the final turn (turn / IQL-step reward; Social RL:
    the agent's round reward, `reward_target` = agent_round), null where there is none."""
    examples = pl.concat(
        [
            turn_examples(silver["turns"], silver["episodes"]),
            best_path_examples(silver["turns"], silver["episodes"]),
        ],
        how="diagonal_relaxed",
    )
    rewards = gold["turn_rewards"]
    per_turn = rewards_by(rewards, "turn_id", ("turn", "decision")).with_columns(
        reward_target=pl.lit("turn")
    )
    per_agent = _agent_round_rewards(rewards).with_columns(reward_target=pl.lit("agent_round"))
    social = pl.col("source") == "social_rl"
    chat = examples.filter(~social).join(per_turn, on="turn_id", how="left")
    agents = examples.filter(social).join(per_agent, on=["episode_id", "actor_id"], how="left")
    return pl.concat([chat, agents], how="diagonal_relaxed")


def sft_rows(examples: pl.DataFrame, include_negative: bool) -> tuple[pl.DataFrame, int]:
    """The examples SFT trains on (a negative final reward only with `include_negative`), and how
    many were left out."""
    kept = examples if include_negative else examples.filter(pl.col("reward").fill_null(0.0) >= 0)
    return kept, examples.height - kept.height
