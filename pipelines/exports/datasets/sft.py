"""`sft`: conversation prefixes ending in an assistant turn (TRL SFTTrainer `messages`).

One example per assistant turn (per agent message in Social RL): every visible earlier turn of the episode
plus that turn. Examples with nothing before the final turn are skipped: there is nothing to condition on,
and every such example would share one empty prompt. Social RL is seen from the speaking agent: its own
messages are `assistant`, other agents' are `user` prefixed with their id; internal coach messages are left
out (see common.visible_turns).
"""

from __future__ import annotations

import polars as pl

from pipelines.exports.datasets.common import (
    agent_view_content,
    agent_view_role,
    as_messages,
    messages_text,
    prefixes,
    rewards_by,
    visible_turns,
)

SFT_SOURCES = ("dialogue", "study", "scenario", "social_rl")
CHAT_SOURCES = ("dialogue", "study", "scenario")


def chat_turns(turns: pl.DataFrame, episodes: pl.DataFrame, sources: tuple[str, ...]) -> pl.DataFrame:
    """Visible turns of the given sources, with their episode's source."""
    meta = episodes.select("episode_id", "source").filter(pl.col("source").is_in(sources))
    return visible_turns(turns).join(meta, on="episode_id")


def turn_examples(turns: pl.DataFrame, episodes: pl.DataFrame) -> pl.DataFrame:
    """(target_id = turn_id, episode_id, messages) for every assistant / agent turn of the SFT sources."""
    chat = chat_turns(turns, episodes, CHAT_SOURCES)
    chat_targets = chat.filter(pl.col("role") == "assistant").with_columns(
        target_id=pl.col("turn_id"), viewer=pl.lit(None, pl.String))
    chat_msgs = as_messages(prefixes(chat, chat_targets, inclusive=True), pl.col("role"), pl.col("text"))
    social = chat_turns(turns, episodes, ("social_rl",))
    social_targets = social.with_columns(target_id=pl.col("turn_id"), viewer=pl.col("actor_id"))
    social_msgs = as_messages(prefixes(social, social_targets, inclusive=True), agent_view_role(),
                              agent_view_content())
    targets = pl.concat([chat_targets, social_targets], how="diagonal").select(
        "target_id", "episode_id", "source", "turn_index", "actor_id")
    examples = targets.join(pl.concat([chat_msgs, social_msgs]), on="target_id")
    return examples.filter(pl.col("messages").list.len() >= 2).rename({"target_id": "turn_id"})


def _agent_round_rewards(turn_rewards: pl.DataFrame) -> pl.DataFrame:
    return turn_rewards.filter(pl.col("target") == "agent_round").select(
        "episode_id", pl.col("agent_id").alias("actor_id"), "reward", "reward_rule", "feedback_ids")


def build_sft(silver: dict[str, pl.DataFrame], gold: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """SFT examples with the reward gold gives the final turn (turn / IQL-step reward; Social RL: the
    agent's round reward, `reward_target` = agent_round), null where there is none."""
    examples = turn_examples(silver["turns"], silver["episodes"])
    rewards = gold["turn_rewards"]
    per_turn = rewards_by(rewards, "turn_id", ("turn", "decision")).with_columns(reward_target=pl.lit("turn"))
    per_agent = _agent_round_rewards(rewards).with_columns(reward_target=pl.lit("agent_round"))
    social = pl.col("source") == "social_rl"
    chat = examples.filter(~social).join(per_turn, on="turn_id", how="left")
    agents = examples.filter(social).join(per_agent, on=["episode_id", "actor_id"], how="left")
    out = pl.concat([chat, agents], how="diagonal_relaxed")
    prompt = pl.col("messages").list.head(pl.col("messages").list.len() - 1)
    return out.with_columns(_prompt=prompt).with_columns(_prompt_text=messages_text("_prompt")).drop("_prompt")
