"""rl_steps on tiny frames: RLDS flags, truncation vs termination, one episode per agent view of
a run."""

from __future__ import annotations

import polars as pl

from pipelines.exports.datasets import build_datasets
from pipelines.exports.datasets.common import DatasetOptions
from pipelines.exports.datasets.rl_steps import build_rl_steps, with_study_steps
from pipelines.exports.datasets.stepwise import build_stepwise
from tests.unit._export_helpers import all_train, episode, reward, tables, turn


def _study(end_reason: str, end_step: int) -> tuple[dict, dict]:
    """Steps 1-3 choose replies t2, t4, t6; the judged resident message at `end_step` ended the
    session and answers the reply of step end_step - 1, which the terminal reward names."""
    e = "study:s1"
    turns = [turn(e, i, "assistant" if i % 2 == 0 else "user", f"t{i}") for i in range(8)]
    decisions = [
        {
            "decision_id": f"k{2 * k}",
            "episode_id": e,
            "turn_id": f"{e}#{2 * k}",
            "actor_type": "policy",
            "action": f"p{2 * k}",
            "candidates": [{"action": f"p{2 * k}", "value": 1.0}],
            "attributes": f'{{"step":{k}}}',
        }
        for k in (1, 2, 3)
    ]
    credited = f"k{2 * (end_step - 1)}"
    rewards = [
        reward("decision", "k2", e, 0.5, "study_stance_step@2", decision_id="k2", turn_id=f"{e}#2"),
        reward(
            "episode",
            e,
            e,
            1.0 if end_reason == "agreement" else 0.0,
            "study_terminal@2",
            decision_id=credited,
            turn_id=f"{e}#{2 * (end_step - 1)}",
        ),
    ]
    return tables(
        gold={"turn_rewards": rewards},
        episodes=[
            episode(
                e, "study", "p1", end_reason=end_reason, attributes=f'{{"end_step":{end_step}}}'
            )
        ],
        turns=turns,
        decisions=decisions,
    )


def _steps(silver: dict, gold: dict) -> pl.DataFrame:
    return build_datasets(silver, gold, all_train(silver))["rl_steps"]


def test_study_agreement_ends_terminal_on_the_step_whose_reply_the_agreeing_message_answered():
    # Agreement judged at step 3 (resident message t5) answers step 2's reply t4: step 3's reply t6
    # is no RL step.
    steps = _steps(*_study("agreement", 3)).sort("step")
    assert steps["step"].to_list() == [0, 1]
    assert steps["action"].to_list() == ["p2", "p4"]
    assert steps["is_first"].to_list() == [True, False]
    assert steps["is_last"].to_list() == [False, True]
    assert steps["is_terminal"].to_list() == [False, True]
    assert steps["discount"].to_list() == [1.0, 0.0]
    assert steps["reward"].to_list() == [0.5, 1.0]
    assert steps["reward_rule"].to_list() == ["study_stance_step@2", "study_terminal@2"]
    assert steps["q_values"][0].to_list() == [{"action": "p2", "value": 1.0}]
    assert '"content":"t1"' in steps["observation"][0] and '"t2"' not in steps["observation"][0]


def test_study_max_turns_is_truncated_last_not_terminal():
    steps = _steps(*_study("max_turns", 4))
    assert steps["action"].to_list() == ["p2", "p4", "p6"]
    assert steps["is_last"].sum() == 1
    assert steps["is_terminal"].sum() == 0
    assert steps["discount"].to_list() == [1.0, 1.0, 1.0]


def test_rl_steps_and_stepwise_read_the_study_steps_kept_in_silver():
    # built once per partition (`with_study_steps`) and read by both builders: with the kept
    # frame emptied neither has a study row, though silver's tables make three steps
    silver, gold = _study("max_turns", 4)
    labels = DatasetOptions().step_labels
    shared = with_study_steps(silver, gold)
    assert shared["_study_steps"]["action"].to_list() == ["p2", "p4", "p6"]
    assert build_rl_steps(shared, gold).height == 3
    assert build_stepwise(shared, gold, labels).height == 1  # one session, its first step rated
    emptied = shared | {"_study_steps": shared["_study_steps"].head(0)}
    assert build_rl_steps(emptied, gold).height == 0
    assert build_stepwise(emptied, gold, labels).height == 0


def test_social_rl_gives_one_episode_per_agent_over_all_rounds_of_a_run():
    eps, turns, rewards = [], [], []
    for r in (1, 2):
        e = f"social_rl:run/round{r}"
        eps.append(
            episode(
                e, "social_rl", "experiment:x", attributes=f'{{"run_dir":"run","round_number":{r}}}'
            )
        )
        turns += [
            turn(e, 0, "agent", f"a{r}", "A"),
            turn(e, 1, "agent", f"b{r}", "B"),
            turn(e, 2, "agent", f"a{r}bis", "A"),
        ]
        rewards.append(
            reward("agent_round", f"{e}/A", e, 0.2 * r, "social_rl_feedback@1", agent_id="A")
        )
    steps = _steps(*tables(gold={"turn_rewards": rewards}, episodes=eps, turns=turns))
    assert sorted(steps["episode_id"].unique()) == ["social_rl:run@A", "social_rl:run@B"]
    a = steps.filter(pl.col("episode_id") == "social_rl:run@A").sort("step")
    assert a["action"].to_list() == ["a1", "a1bis", "a2", "a2bis"]
    assert a["reward"].to_list() == [
        0.0,
        0.2,
        0.0,
        0.4,
    ]  # the round reward lands on the round's last message
    assert a["is_last"].to_list() == [False, False, False, True]
    assert not a["is_terminal"].any()


def test_decision_steps_are_per_actor_and_truncated():
    e = "decision:s1"
    decisions = [
        {"decision_id": f"d{i}", "episode_id": e, "actor_id": actor, "action": "POSTED"}
        for i, actor in enumerate(("x", "y", "x"))
    ]
    steps = _steps(*tables(episodes=[episode(e, "decision")], decisions=decisions))
    assert steps.group_by("episode_id").len().sort("episode_id").rows() == [
        (f"{e}@x", 2),
        (f"{e}@y", 1),
    ]
    assert (
        steps["is_first"].sum() == 2
        and steps["is_last"].sum() == 2
        and steps["is_terminal"].sum() == 0
    )
    assert (steps["reward"] == 0.0).all() and steps["reward_rule"].is_null().all()


def test_an_episode_is_one_example_its_steps_share_the_hash_of_the_whole_episode():
    """Two sessions whose first observation is equal but whose later steps differ: one
    prompt_hash per episode, different between them (duplicate-prompt removal then keeps or drops
    episodes whole)."""
    eps, turns, decisions = [], [], []
    for s, later in (("s1", "go now"), ("s2", "stay calm")):
        e = f"study:{s}"
        eps.append(episode(e, "study", s, end_reason="unknown"))
        turns += [
            turn(e, 0, "assistant", "greeting"),
            turn(e, 1, "user", "hello"),
            turn(e, 2, "assistant", "pack"),
            turn(e, 3, "user", later),
            turn(e, 4, "assistant", "leave"),
        ]
        decisions += [
            {
                "decision_id": f"{s}k{i}",
                "episode_id": e,
                "turn_id": f"{e}#{i}",
                "actor_type": "policy",
                "action": "p",
                "candidates": [],
                "attributes": f'{{"step": {i // 2}}}',
            }
            for i in (2, 4)
        ]
    steps = _steps(*tables(episodes=eps, turns=turns, decisions=decisions))
    per_episode = steps.group_by("episode_id").agg(
        pl.col("prompt_hash").n_unique().alias("n"), pl.col("prompt_hash").first()
    )
    assert per_episode["n"].to_list() == [1, 1]
    assert per_episode["prompt_hash"].n_unique() == 2
    first_observations = steps.filter(pl.col("step") == 0)["observation"].unique()
    assert first_observations.len() == 1  # the case that used to drop step 0 of one of them
