"""`rl_steps`: RLDS-style steps (one row per step) for offline RL.

Convention: step t holds the observation before the action, the action, and the reward that followed
it; the last step of an episode has `is_last`; `is_terminal` (and discount 0) only when the episode
really ended (study: agreement or refusal). Max-turn study sessions, unknown ends, decision sessions
and Social RL runs are truncated: `is_last` without `is_terminal`. Steps without a known reward
carry 0.0 and a null `reward_rule`. `episode_id` is the RL episode; `source_episode_id` the silver
episode of the step.

- study: one episode per session; step = an IQL decision, action = the policy chosen, q_values = its
  Q-values; reward = the stance-step reward, plus the terminal reward on the step whose action
  caused the ending, which is the episode's last step (replies written after the ending are not RL
  steps).
- decision: one episode per actor of a decision session; observation = the full context JSON.
- social_rl: one episode per agent view of a run (all its rounds); step = one of the agent's
  messages, observation = the visible round transcript before it; the agent-round reward lands on
  its last message of the round. Internal coach messages are in no observation.
- social_rl coach: one episode per run × agent (policy `coach`), step = a round, action = the policy
  adaptation applied to the agent (or `none`); see coach_steps.py.

An episode is one example: its `prompt_hash` is the hash of its whole (observation, action)
sequence, the same on every step, so duplicate-prompt removal across splits keeps or drops whole
episodes and never cuts steps out of one (an empty first observation or a templated greeting shared
by many episodes is not a duplicate episode).
"""

from __future__ import annotations

import polars as pl

from pipelines.exports.datasets.coach_steps import coach_steps
from pipelines.exports.datasets.common import (
    agent_view_content,
    agent_view_role,
    as_messages,
    messages_text,
    prefixes,
    rewards_by,
    visible_turns,
)
from pipelines.exports.datasets.decisions import decision_prompts
from pipelines.sources.base import sha256_hex

TERMINAL_END_REASONS = ("agreement", "refusal")
# key under which `with_study_steps` keeps the study steps for both builders that read them
_SHARED_STUDY = "_study_steps"
Q_VALUES = pl.List(pl.Struct({"action": pl.String, "value": pl.Float64}))


def _observations(
    turns: pl.DataFrame, targets: pl.DataFrame, role: pl.Expr, content: pl.Expr
) -> pl.DataFrame:
    msgs = as_messages(prefixes(turns, targets, inclusive=False), role, content)
    return (
        targets.join(msgs, on="target_id", how="left")
        .with_columns(
            observation=pl.when(pl.col("messages").is_null())
            .then(pl.lit("[]"))
            .otherwise(messages_text("messages"))
        )
        .drop("messages")
    )


def _merge_provenance(a: str, b: str) -> list[pl.Expr]:
    """Step + terminal reward provenance on one row."""
    return [
        pl.concat_str(
            pl.col(f"reward_rule{a}"), pl.col(f"reward_rule{b}"), separator=",", ignore_nulls=True
        )
        .replace("", None)
        .alias("reward_rule"),
        pl.concat_list(
            pl.col(f"feedback_ids{a}").fill_null([]), pl.col(f"feedback_ids{b}").fill_null([])
        )
        .list.unique()
        .list.eval(pl.element().sort())
        .alias("feedback_ids"),
    ]


def _contiguous_steps(
    decisions: pl.DataFrame, episodes: pl.DataFrame, turns: pl.DataFrame
) -> pl.DataFrame:
    """Study decisions before `end_step`, cut at the first gap in the step numbers."""
    steps = (
        decisions.join(episodes, on="episode_id")
        .join(turns.select("turn_id", "turn_index"), on="turn_id")
        .with_columns(
            iql_step=pl.col("attributes").str.json_path_match("$.step").cast(pl.Int64, strict=False)
        )
    )
    steps = steps.filter(
        pl.col("end_step").is_null() | (pl.col("iql_step") < pl.col("end_step"))
    ).sort("episode_id", "iql_step")
    contiguous = pl.col("iql_step") - pl.col("iql_step").min().over("episode_id") == pl.int_range(
        pl.len()
    ).over("episode_id")
    return steps.filter(contiguous).with_columns(
        target_id=pl.col("decision_id"), viewer=pl.lit(None, pl.String)
    )


def _with_step_rewards(steps: pl.DataFrame, turn_rewards: pl.DataFrame) -> pl.DataFrame:
    """Each step's decision reward and, on the step that ended the session, the terminal one."""
    rewards = rewards_by(turn_rewards, "decision_id", ("decision",))
    terminal = turn_rewards.filter(
        (pl.col("target") == "episode") & pl.col("decision_id").is_not_null()
    )
    terminal = terminal.group_by("decision_id").agg(
        pl.col("reward").mean().alias("reward_end"),
        pl.col("reward_rule").unique().sort().str.join(",").alias("reward_rule_end"),
        pl.col("feedback_ids").explode().unique().sort().alias("feedback_ids_end"),
    )
    return steps.join(rewards, on="decision_id", how="left").join(
        terminal, on="decision_id", how="left"
    )


def with_study_steps(
    silver: dict[str, pl.DataFrame], gold: dict[str, pl.DataFrame]
) -> dict[str, pl.DataFrame]:
    """`silver` plus the study steps, built once: `rl_steps` and `stepwise` both read them, and
    their observations (every earlier turn of a session, as JSON) are most of their cost."""
    return silver | {_SHARED_STUDY: study_steps(silver, gold)}


def study_steps(silver: dict[str, pl.DataFrame], gold: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """IQL steps of study sessions in step order, ending with the action that caused the
    session's end.

    The judged resident message at `end_step` (episode attributes) ended the session and answers
    the reply of step end_step−1: that step is the episode's last, carries the terminal reward
    (the study_terminal row names its decision) and is terminal on agreement / refusal. Steps
    from end_step on chose replies written after the outcome was decided; they stay in silver
    `decisions` (attribute `after_end`) and in the chat datasets, not in the RL episode. The
    episode is the contiguous run of steps from its first one: a step left out at silver (texts
    not matching the transcript) or whose reply is not in the transcript cuts it there, since the
    next observation would follow an action the episode does not hold. A session ended by its
    first resident message (credited to the scripted opening) has no RL step.
    """
    if _SHARED_STUDY in silver:
        return silver[_SHARED_STUDY]
    episodes = (
        silver["episodes"]
        .filter(pl.col("source") == "study")
        .select(
            "episode_id",
            "end_reason",
            end_step=pl.col("attributes")
            .str.json_path_match("$.end_step")
            .cast(pl.Int64, strict=False),
        )
    )
    turns = visible_turns(silver["turns"]).join(episodes.select("episode_id"), on="episode_id")
    steps = _contiguous_steps(silver["decisions"], episodes, turns)
    steps = _observations(turns, steps, pl.col("role"), pl.col("text"))
    steps = _with_step_rewards(steps, gold["turn_rewards"])
    ended_here = pl.col("end_reason").is_in(TERMINAL_END_REASONS) & (
        pl.col("iql_step") == pl.col("end_step") - 1
    )
    return steps.sort("episode_id", "iql_step").select(
        pl.col("episode_id").alias("source_episode_id"),
        "episode_id",
        "turn_index",
        "observation",
        "action",
        pl.col("candidates").cast(Q_VALUES).alias("q_values"),
        pl.lit("iql").alias("policy"),
        (pl.col("reward").fill_null(0.0) + pl.col("reward_end").fill_null(0.0)).alias("reward"),
        ended_here.alias("terminal"),
        *_merge_provenance("", "_end"),
        pl.col("decision_id"),
    )


def decision_steps(silver: dict[str, pl.DataFrame], gold: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """Each actor's decisions in one session, in time order (then sequence / id: ties stay
    stable)."""
    rows = decision_prompts(silver, gold).with_columns(
        _seq=pl.col("attributes")
        .str.json_path_match("$.sequence_number")
        .cast(pl.Int64, strict=False)
    )
    return rows.sort("episode_id", "actor_id", "ts", "_seq", "decision_id", nulls_last=True).select(
        pl.col("episode_id").alias("source_episode_id"),
        pl.concat_str("episode_id", pl.lit("@"), pl.col("actor_id").fill_null("unknown")).alias(
            "episode_id"
        ),
        pl.col("context").fill_null("{}").alias("observation"),
        "action",
        pl.col("candidates").cast(Q_VALUES).alias("q_values"),
        pl.col("actor_id").alias("policy"),
        pl.col("reward").fill_null(0.0),
        terminal=pl.lit(False),
        reward_rule=pl.col("reward_rule"),
        feedback_ids=pl.col("feedback_ids"),
        decision_id=pl.col("decision_id"),
    )


def social_steps(silver: dict[str, pl.DataFrame], gold: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """Each agent's messages over all rounds of its run, seen from that agent."""
    episodes = (
        silver["episodes"]
        .filter(pl.col("source") == "social_rl")
        .select(
            "episode_id",
            run=pl.col("attributes")
            .str.json_path_match("$.run_dir")
            .fill_null(pl.col("episode_id")),
            round=pl.col("attributes")
            .str.json_path_match("$.round_number")
            .cast(pl.Int64, strict=False),
        )
    )
    turns = visible_turns(silver["turns"]).join(episodes.select("episode_id"), on="episode_id")
    steps = turns.join(episodes, on="episode_id").with_columns(
        target_id=pl.col("turn_id"), viewer=pl.col("actor_id")
    )
    steps = _observations(turns, steps, agent_view_role(), agent_view_content())
    rewards = (
        gold["turn_rewards"]
        .filter(pl.col("target") == "agent_round")
        .select(
            "episode_id",
            pl.col("agent_id").alias("actor_id"),
            "reward",
            "reward_rule",
            "feedback_ids",
        )
    )
    last_in_round = pl.col("turn_index") == pl.col("turn_index").max().over(
        "episode_id", "actor_id"
    )
    steps = steps.join(rewards, on=["episode_id", "actor_id"], how="left").with_columns(
        [
            pl.when(last_in_round).then(pl.col(c)).otherwise(None).alias(c)
            for c in ("reward", "reward_rule", "feedback_ids")
        ]
    )
    return steps.sort("run", "actor_id", "round", "turn_index", nulls_last=True).select(
        pl.col("episode_id").alias("source_episode_id"),
        pl.concat_str(
            pl.lit("social_rl:"), "run", pl.lit("@"), pl.col("actor_id").fill_null("unknown")
        ).alias("episode_id"),
        "observation",
        pl.col("text").alias("action"),
        q_values=pl.lit(None, Q_VALUES),
        policy=pl.col("actor_id"),
        reward=pl.col("reward").fill_null(0.0),
        terminal=pl.lit(False),
        reward_rule=pl.col("reward_rule"),
        feedback_ids=pl.col("feedback_ids"),
        turn_id=pl.col("turn_id"),
    )


def rlds(steps: pl.DataFrame) -> pl.DataFrame:
    """Steps already in episode order → step number, is_first / is_last / is_terminal, discount."""
    by_episode = pl.col("episode_id")
    out = steps.with_columns(step=pl.int_range(pl.len(), dtype=pl.Int64).over(by_episode))
    is_last = pl.col("step") == pl.col("step").max().over(by_episode)
    return (
        out.with_columns(
            is_first=pl.col("step") == 0,
            is_last=is_last,
            is_terminal=is_last & pl.col("terminal"),
        )
        .with_columns(discount=pl.when(pl.col("is_terminal")).then(0.0).otherwise(1.0))
        .drop("terminal")
    )


def with_episode_text(steps: pl.DataFrame) -> pl.DataFrame:
    """`_prompt_text` = the episode as a whole: its steps' sha256(JSON {observation, action}) in
    step order (hashed per step first, so a long episode of long observations stays a short
    text)."""
    per_step = sha256_hex(pl.struct("observation", "action").struct.json_encode())
    episodes = (
        steps.sort("episode_id", "step")
        .with_columns(_step_hash=per_step)
        .group_by("episode_id")
        .agg(_prompt_text=pl.lit("rl_steps episode:") + pl.col("_step_hash").str.join(","))
    )
    return steps.join(episodes, on="episode_id", how="left")


def build_rl_steps(silver: dict[str, pl.DataFrame], gold: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """All RL steps; `_prompt_text` is the whole episode (see the module doc)."""
    parts = [
        study_steps(silver, gold).drop("turn_index"),
        decision_steps(silver, gold),
        social_steps(silver, gold),
        coach_steps(silver, gold),
    ]
    steps = rlds(pl.concat(parts, how="diagonal_relaxed"))
    return with_episode_text(steps).select(
        "episode_id",
        "step",
        "observation",
        "action",
        "reward",
        "discount",
        "is_first",
        "is_last",
        "is_terminal",
        "q_values",
        "policy",
        "source_episode_id",
        "reward_rule",
        "feedback_ids",
        "decision_id",
        "turn_id",
        "_prompt_text",
    )
