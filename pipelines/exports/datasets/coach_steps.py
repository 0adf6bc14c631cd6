"""The coach-level Social RL view in `rl_steps`: what the coach did to each agent's policy.

One RL episode per run × agent (`social_rl:<run>@<agent>#coach`, policy `coach`), one step per
round the agent has a row in `agent_rounds`, in round order:

- observation: JSON `{round, role, feedback{engagement, theoretical_alignment,
  contribution_value}, cues_active}` — the agent's feedback vector in round r and, where the run
  records cue adaptations (documented shape), the cues active for the agent before round r's
  adaptation (replayed from earlier `activate_cue` / `deactivate_cue` decisions; null where
  nothing is known). The saved policy_state is the run's end state, so it is never observed.
- action: the adaptation(s) the coach applied to the agent in round r (silver `decisions` with
  actor_type `coach`, `;`-joined in file order), or `none`.
- reward: gold `social_rl_adaptation_effect` (change of the agent's feedback from r to r+1); the
  last round has none (0.0, null rule). Episodes are truncated, never terminal.
"""

from __future__ import annotations

import polars as pl

SCORES = ("engagement", "theoretical_alignment", "contribution_value")
COACH = "coach"
NO_ADAPTATION = "none"
CUE_SWITCHES = {"activate_cue": True, "deactivate_cue": False}


def _agent_rounds(silver: dict[str, pl.DataFrame]) -> pl.DataFrame:
    attribute = pl.col("attributes").str.json_path_match
    episodes = silver["episodes"].filter(pl.col("source") == "social_rl")
    runs = episodes.select("episode_id", run=attribute("$.run_dir").fill_null(pl.col("episode_id")))
    return silver["agent_rounds"].join(runs, on="episode_id")


def _adaptations(silver: dict[str, pl.DataFrame]) -> pl.DataFrame:
    attribute = pl.col("attributes").str.json_path_match
    return (
        silver["decisions"]
        .filter(pl.col("actor_type") == COACH)
        .select(
            "episode_id",
            "decision_id",
            "action",
            agent_id="actor_id",
            adaptation_type=attribute("$.adaptation_type"),
            cue=attribute("$.cue"),
            index=attribute("$.adaptation_index").cast(pl.Int64, strict=False),
        )
    )


def _cues_active(steps: pl.DataFrame, adaptations: pl.DataFrame) -> pl.DataFrame:
    """run, agent_id, round_number → cues active before that round's adaptation (replayed)."""
    switches = adaptations.filter(
        pl.col("adaptation_type").is_in(list(CUE_SWITCHES)) & pl.col("cue").is_not_null()
    ).join(steps.select("episode_id", "run", switch_round="round_number").unique(), on="episode_id")
    switches = switches.select(
        "run",
        "agent_id",
        "switch_round",
        "index",
        "cue",
        on=pl.col("adaptation_type") == "activate_cue",
    )
    known = steps.select("run", "agent_id", "round_number").join(
        switches.select("run", "agent_id").unique(), on=["run", "agent_id"]
    )
    last = (
        known.join(switches, on=["run", "agent_id"])
        .filter(pl.col("switch_round") < pl.col("round_number"))
        .sort("switch_round", "index")
        .group_by("run", "agent_id", "round_number", "cue")
        .agg(pl.col("on").last())
    )
    active = last.group_by("run", "agent_id", "round_number").agg(
        cues_active=pl.col("cue").filter(pl.col("on")).sort()
    )
    return known.join(active, on=["run", "agent_id", "round_number"], how="left").with_columns(
        pl.col("cues_active").fill_null(pl.lit([], pl.List(pl.String)))
    )


def coach_steps(silver: dict[str, pl.DataFrame], gold: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """Coach steps in episode order, in the columns `rl_steps.build_rl_steps` concatenates."""
    steps = _agent_rounds(silver)
    adaptations = _adaptations(silver)
    applied = (
        adaptations.sort("index")
        .group_by("episode_id", "agent_id")
        .agg(
            applied=pl.col("action").fill_null("unknown").str.join(";"),
            decision_id=pl.when(pl.len() == 1).then(pl.col("decision_id").first()),
        )
    )
    rewards = gold["turn_rewards"].filter(pl.col("target") == "coach_step")
    steps = (
        steps.join(applied, on=["episode_id", "agent_id"], how="left")
        .join(_cues_active(steps, adaptations), on=["run", "agent_id", "round_number"], how="left")
        .join(
            rewards.select("episode_id", "agent_id", "reward", "reward_rule", "feedback_ids"),
            on=["episode_id", "agent_id"],
            how="left",
        )
    )
    observation = pl.struct(
        round=pl.col("round_number"),
        role=pl.col("role"),
        feedback=pl.struct(*SCORES),
        cues_active=pl.col("cues_active"),
    ).struct.json_encode()
    return steps.sort("run", "agent_id", "round_number").select(
        pl.col("episode_id").alias("source_episode_id"),
        pl.format("social_rl:{}@{}#{}", "run", "agent_id", pl.lit(COACH)).alias("episode_id"),
        observation.alias("observation"),
        pl.col("applied").fill_null(NO_ADAPTATION).alias("action"),
        policy=pl.lit(COACH),
        reward=pl.col("reward").fill_null(0.0),
        terminal=pl.lit(False),
        reward_rule=pl.col("reward_rule"),
        feedback_ids=pl.col("feedback_ids"),
        decision_id=pl.col("decision_id"),
    )
