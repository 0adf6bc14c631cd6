"""`stepwise`: step-level labels in TRL's stepwise-supervision format (`prompt: str`,
`completions: list[str]`, `labels: list[bool]`, one label per completion), what TRL's
`PRMTrainer` trains a process reward model on.

An example is one actor's steps through one conversation; a step is a reply the actor was judged
on, its label the step label rule (gold/step_labels.py, `[labels] stepwise` in rewards.toml) over
the reward the reward rules gave that step:

- study: one example per session, the steps are the operator replies the IQL policy chose, in
  step order, as in `rl_steps` (contiguous from the first, none after the reply that ended the
  session); the reward of step k is its `rl_steps` reward (the stance change its reply caused plus
  the terminal reward of the ending it caused).
- social_rl: one example per agent of a run, one step per round the agent spoke in, ending with
  its last message of the round; the reward is the agent's round feedback (`social_rl_feedback`).

The steps are plain text, as TRL's standard format is: a step holds the conversation since the
actor's previous step, one `<speaker>: <text>` line per message joined by a blank line, ending
with the actor's own message(s) — a reply is judged by what it answers, and TRL supervises only
the step's last token, so the other side's messages are context, never a target. The prompt is
what came before the first step: the study's scenario and the operator's scripted opening; for
Social RL the framework and whose turns the steps are. A step whose reward is unknown (no judged
stance after the reply, no round feedback) has no label: the example ends before it, since a
later step would follow a step the example does not hold; an example without a labelled step is
left out.

`prompt_hash` hashes the whole example (prompt and completions), as `rl_steps` hashes a whole
episode: examples sharing a templated opening are not duplicates of each other.
"""

from __future__ import annotations

import polars as pl

from pipelines.exports.datasets.common import visible_turns
from pipelines.exports.datasets.rl_steps import study_steps
from pipelines.exports.datasets.sft import SCENARIO_PREFIX
from pipelines.gold.step_labels import StepLabels

JOIN = "\n\n"
EXAMPLE_PREFIX = "stepwise example:"


def examples(turns: pl.DataFrame, steps: pl.DataFrame, prompts: pl.DataFrame) -> pl.DataFrame:
    """One row per example with a labelled first step.

    - turns: example_id, pos (order in the example's transcript), line (`<speaker>: <text>`);
    - steps: example_id, pos, turn_id, decision_id, reward, label, reward_rule, feedback_ids,
      one row per step, `pos` of the actor's last message of the step; `label` null where the
      step's reward is unknown;
    - prompts: example_id, prompt_end (turns at or before it are the prompt's), header (text put
      before the prompt's turns, or null).
    """
    steps = steps.sort("example_id", "pos")
    unlabelled_before = pl.col("label").is_null().cum_sum().over("example_id")
    kept = steps.filter(unlabelled_before == 0)
    ends = kept.select("example_id", "pos", _end=pl.lit(1, pl.Int64))
    marked = (
        turns.join(prompts.select("example_id", "prompt_end"), on="example_id")
        .join(ends, on=["example_id", "pos"], how="left")
        .sort("example_id", "pos")
        .with_columns(_end=pl.col("_end").fill_null(0))
        # a turn belongs to the first step ending at or after it
        .with_columns(step=pl.col("_end").cum_sum().over("example_id") - pl.col("_end"))
    )
    n_steps = kept.group_by("example_id").agg(n=pl.len())
    in_steps = marked.filter(pl.col("pos") > pl.col("prompt_end")).join(
        n_steps,
        on="example_id",
        maintain_order="left",  # the steps' texts stay in turn order
    )
    completions = (
        in_steps.filter(pl.col("step") < pl.col("n"))
        .group_by("example_id", "step", maintain_order=True)
        .agg(pl.col("line").str.join(JOIN))
        .group_by("example_id", maintain_order=True)
        .agg(completions=pl.col("line"))
    )
    opening = (
        marked.filter(pl.col("pos") <= pl.col("prompt_end"))
        .group_by("example_id", maintain_order=True)
        .agg(_opening=pl.col("line").str.join(JOIN))
    )
    per_example = kept.group_by("example_id", maintain_order=True).agg(
        labels=pl.col("label"),
        rewards=pl.col("reward"),
        turn_ids=pl.col("turn_id"),
        decision_ids=pl.col("decision_id"),
        reward_rule=pl.col("reward_rule")
        .str.split(",")
        .explode()
        .drop_nulls()
        .unique()
        .sort()
        .str.join(","),
        feedback_ids=pl.col("feedback_ids").explode().drop_nulls().unique().sort(),
    )
    prompt = pl.concat_str("header", "_opening", separator=JOIN, ignore_nulls=True)
    return (
        per_example.join(completions, on="example_id")
        .join(prompts, on="example_id")
        .join(opening, on="example_id", how="left")
        .with_columns(prompt=prompt)
        .drop("prompt_end", "header", "_opening")
    )


def _line(speaker: pl.Expr) -> pl.Expr:
    return pl.concat_str(speaker.fill_null("unknown"), pl.lit(": "), pl.col("text"))


def study_stepwise(
    silver: dict[str, pl.DataFrame], gold: dict[str, pl.DataFrame], labels: StepLabels
) -> pl.DataFrame:
    """Study examples (see the module doc), keyed by their session's `episode_id`."""
    episodes = silver["episodes"].filter(pl.col("source") == "study")
    turns = visible_turns(silver["turns"]).join(episodes.select("episode_id"), on="episode_id")
    speaker = pl.col("native_role").fill_null(pl.col("role")).str.to_titlecase()
    lines = turns.select(
        example_id="episode_id", pos="turn_index", line=_line(speaker), role="role"
    )
    rows = study_steps(silver, gold)
    # `study_steps` fills an unknown reward with 0.0; its null rule says the reward is unknown
    known = pl.col("reward_rule").is_not_null()
    steps = rows.join(
        turns.select("episode_id", "turn_index", "turn_id", "actor_id"),
        on=["episode_id", "turn_index"],
    ).select(
        example_id="episode_id",
        pos="turn_index",
        turn_id="turn_id",
        decision_id="decision_id",
        reward=pl.when(known).then(pl.col("reward")),
        label=pl.when(known).then(labels.study(pl.col("reward"))),
        reward_rule="reward_rule",
        feedback_ids="feedback_ids",
        actor_id="actor_id",
    )
    first = steps.group_by("example_id").agg(first=pl.col("pos").min())
    # the prompt ends with the operator's last message before its first step (the opening)
    opening = (
        lines.join(first, on="example_id")
        .filter((pl.col("role") == "assistant") & (pl.col("pos") < pl.col("first")))
        .group_by("example_id")
        .agg(prompt_end=pl.col("pos").max())
    )
    scenario = episodes.select(
        example_id="episode_id",
        header=pl.lit(SCENARIO_PREFIX) + pl.col("attributes").str.json_path_match("$.scenario"),
    ).with_columns(pl.col("header").replace(SCENARIO_PREFIX, None))
    prompts = first.join(opening, on="example_id", how="left").join(scenario, on="example_id")
    prompts = prompts.select("example_id", pl.col("prompt_end").fill_null(-1), "header")
    actors = steps.group_by("example_id").agg(actor_id=pl.col("actor_id").drop_nulls().first())
    out = examples(lines.drop("role"), steps.drop("actor_id"), prompts)
    return out.join(actors, on="example_id", how="left").select(
        *_columns(), episode_id="example_id", source_episode_id="example_id"
    )


def social_stepwise(
    silver: dict[str, pl.DataFrame], gold: dict[str, pl.DataFrame], labels: StepLabels
) -> pl.DataFrame:
    """Social RL examples (see the module doc), keyed `social_rl:<run>@<agent>` as `rl_steps`
    names an agent's view of a run."""
    attribute = pl.col("attributes").str.json_path_match
    rounds = (
        silver["episodes"]
        .filter(pl.col("source") == "social_rl")
        .select(
            "episode_id",
            run=attribute("$.run_dir").fill_null(pl.col("episode_id")),
            round=attribute("$.round_number").cast(pl.Int64, strict=False),
            framework=attribute("$.framework"),
        )
    )
    turns = visible_turns(silver["turns"]).join(rounds, on="episode_id")
    turns = turns.sort("run", "round", "turn_index", nulls_last=True).with_columns(
        pos=pl.int_range(pl.len(), dtype=pl.Int64).over("run")
    )
    agents = turns.select("run", agent="actor_id").drop_nulls().unique()
    example_id = pl.format("social_rl:{}@{}", "run", "agent")
    lines = turns.join(agents, on="run").select(
        example_id=example_id, pos="pos", line=_line(pl.col("actor_id"))
    )
    rewards = (
        gold["turn_rewards"]
        .filter((pl.col("target") == "agent_round") & pl.col("agent_id").is_not_null())
        .group_by("episode_id", "agent_id")
        .agg(
            pl.col("reward").mean(),
            pl.col("reward_rule").unique().sort().str.join(","),
            pl.col("feedback_ids").explode().drop_nulls().unique().sort(),
        )
    )
    own = turns.filter(pl.col("actor_id").is_not_null())
    last_in_round = own.group_by("run", "episode_id", agent="actor_id").agg(
        pl.col("pos").max(), pl.col("turn_id").sort_by("pos").last(), pl.col("round").first()
    )
    steps = last_in_round.join(
        rewards.rename({"agent_id": "agent"}), on=["episode_id", "agent"], how="left"
    ).select(
        example_id=example_id,
        pos="pos",
        turn_id="turn_id",
        decision_id=pl.lit(None, pl.String),
        reward="reward",
        label=labels.social_rl(pl.col("reward")),
        reward_rule="reward_rule",
        feedback_ids="feedback_ids",
        agent="agent",
        source_episode_id="episode_id",
    )
    first = (
        steps.sort("pos")
        .group_by("example_id")
        .agg(pl.col("agent").first(), pl.col("source_episode_id").first())
    )
    framework = rounds.group_by("run").agg(pl.col("framework").drop_nulls().first())
    frameworks = agents.join(framework, on="run").select(
        example_id=example_id,
        header=pl.concat_str(
            pl.lit("A discussion"),
            pl.lit(" (") + pl.col("framework") + pl.lit(")"),
            pl.lit(". The steps are the turns of "),
            pl.col("agent"),
            pl.lit(", one per round."),
            ignore_nulls=True,
        ),
    )
    prompts = first.join(frameworks, on="example_id").select(
        "example_id", prompt_end=pl.lit(-1, pl.Int64), header="header"
    )
    out = examples(lines, steps.drop("agent", "source_episode_id"), prompts)
    return out.join(first, on="example_id").select(
        *_columns(agent="agent"), episode_id="example_id", source_episode_id="source_episode_id"
    )


def _columns(agent: str = "actor_id") -> list[pl.Expr]:
    return [
        pl.col("prompt"),
        pl.col("completions"),
        pl.col("labels"),
        pl.col("rewards"),
        pl.col(agent).alias("actor_id"),
        pl.col("turn_ids"),
        pl.col("decision_ids"),
        pl.col("reward_rule"),
        pl.col("feedback_ids"),
    ]


def build_stepwise(
    silver: dict[str, pl.DataFrame], gold: dict[str, pl.DataFrame], labels: StepLabels
) -> pl.DataFrame:
    """Every stepwise example; `_prompt_text` is the whole example (see the module doc)."""
    parts = [study_stepwise(silver, gold, labels), social_stepwise(silver, gold, labels)]
    out = pl.concat(parts, how="vertical_relaxed").with_columns(label_rule=pl.lit(labels.rule))
    example = pl.struct("prompt", "completions").struct.json_encode()
    return out.with_columns(_prompt_text=pl.lit(EXAMPLE_PREFIX) + example)
