"""`stepwise` on tiny hand frames: the step label rule (stepwise_label@1), what a step holds, where
an example ends, and the trainability check of the shape. Expected labels are worked out by hand
from the rewards written here."""

from __future__ import annotations

import polars as pl
import pytest

from pipelines.config.settings import SettingsError
from pipelines.exports.datasets import build_datasets
from pipelines.exports.datasets.common import DatasetOptions
from pipelines.gold.params import load_params
from pipelines.gold.step_labels import StepLabels
from pipelines.release.trainability.problems import ranked_problems
from tests.unit._export_helpers import all_train, episode, reward, tables, turn

S = "study:s1"


def _study(stance: dict[int, float], terminal: float | None = None, end_step: int = 4) -> tuple:
    """Opening t0 (operator), then resident t1, t3, t5 and operator replies t2, t4, t6 chosen by
    IQL steps 1-3 (decisions k2, k4, k6). `stance`: step → its study_stance_step reward;
    `terminal`: the study_terminal reward, credited to step end_step - 1."""
    roles = {0: "operator", 1: "resident"}
    turns = [
        turn(S, i, "assistant" if i % 2 == 0 else "user", f"t{i}", native_role=roles[i % 2])
        for i in range(7)
    ]
    decisions = [
        {
            "decision_id": f"k{2 * k}",
            "episode_id": S,
            "turn_id": f"{S}#{2 * k}",
            "actor_type": "policy",
            "action": f"p{k}",
            "candidates": [{"action": f"p{k}", "value": 1.0}],
            "attributes": f'{{"step":{k}}}',
        }
        for k in (1, 2, 3)
    ]
    rewards = [
        reward(
            "decision",
            f"k{2 * k}",
            S,
            value,
            "study_stance_step@2",
            decision_id=f"k{2 * k}",
            turn_id=f"{S}#{2 * k}",
        )
        for k, value in stance.items()
    ]
    if terminal is not None:
        credited = 2 * (end_step - 1)
        rewards.append(
            reward(
                "episode",
                S,
                S,
                terminal,
                "study_terminal@2",
                decision_id=f"k{credited}",
                turn_id=f"{S}#{credited}",
            )
        )
    attributes = f'{{"end_step":{end_step},"scenario":"Smoke nearby."}}'
    return tables(
        gold={"turn_rewards": rewards},
        episodes=[episode(S, "study", "p1", end_reason="unknown", attributes=attributes)],
        turns=turns,
        decisions=decisions,
    )


def _stepwise(silver: dict, gold: dict, labels: StepLabels | None = None) -> pl.DataFrame:
    options = DatasetOptions(step_labels=labels or StepLabels())
    return build_datasets(silver, gold, all_train(silver), options)["stepwise"]


def test_study_step_is_good_when_its_stance_did_not_regress_and_its_ending_was_no_refusal():
    # step 1 NEUTRAL -> NEUTRAL (0.0): good; step 2 AGREE -> NEUTRAL (-0.5): not good; step 3
    # REFUSE -> REFUSE (0.0) but it ended the session in a refusal (-1): 0.0 - 1 = -1, not good
    silver, gold = _study({1: 0.0, 2: -0.5, 3: 0.0}, terminal=-1.0, end_step=4)
    row = _stepwise(silver, gold).row(0, named=True)
    assert row["labels"] == [True, False, False]
    assert row["rewards"] == [0.0, -0.5, -1.0]
    assert row["reward_rule"] == "study_stance_step@2,study_terminal@2"
    assert row["label_rule"] == "stepwise_label@1"
    assert row["decision_ids"] == ["k2", "k4", "k6"]


def test_study_agreement_it_caused_makes_a_step_good():
    # step 3 NEUTRAL -> AGREE (+0.5) and the agreement's +1: 1.5
    silver, gold = _study({1: -0.5, 2: 0.0, 3: 0.5}, terminal=1.0, end_step=4)
    row = _stepwise(silver, gold).row(0, named=True)
    assert row["labels"] == [False, True, True]
    assert row["rewards"] == [-0.5, 0.0, 1.5]


def test_study_steps_are_the_reply_with_what_it_answers_after_the_scenario_and_opening():
    silver, gold = _study({1: 0.0, 2: 0.0, 3: 0.0})
    row = _stepwise(silver, gold).row(0, named=True)
    assert row["prompt"] == "The resident's scenario: Smoke nearby.\n\nOperator: t0"
    assert row["completions"] == [
        "Resident: t1\n\nOperator: t2",
        "Resident: t3\n\nOperator: t4",
        "Resident: t5\n\nOperator: t6",
    ]
    assert row["turn_ids"] == [f"{S}#2", f"{S}#4", f"{S}#6"]
    assert (row["episode_id"], row["source"], row["actor_id"]) == (S, "study", None)


def test_a_study_example_ends_before_its_first_step_without_a_reward():
    # step 2's reply was never judged (no stance after it): steps 2 and 3 are not in the example
    silver, gold = _study({1: 0.5, 3: 0.5})
    row = _stepwise(silver, gold).row(0, named=True)
    assert row["labels"] == [True]
    assert row["completions"] == ["Resident: t1\n\nOperator: t2"]


def test_a_study_session_without_a_labelled_step_is_no_example():
    silver, gold = _study({})
    assert _stepwise(silver, gold).height == 0


def test_the_study_threshold_is_the_label_rules_parameter():
    # at a minimum of 0.5, an unchanged stance (0.0) is no longer good; 0.5 still is
    silver, gold = _study({1: 0.0, 2: 0.5, 3: -0.5})
    labels = StepLabels.from_params({"stepwise_label": {"study_min_reward": 0.5}})
    assert _stepwise(silver, gold, labels)["labels"].to_list() == [[False, True, False]]
    assert _stepwise(silver, gold)["labels"].to_list() == [[True, True, False]]


def _social() -> tuple:
    """Run `r` of agents A and B over two rounds; the coach's internal message is nobody's step."""
    episodes, turns = [], []
    for n, said in (
        (1, [("A", "a1"), ("B", "b1"), ("A", "a2"), ("Coach", "c1")]),
        (2, [("B", "b3"), ("A", "a3")]),
    ):
        e = f"social_rl:r/round{n}"
        attributes = f'{{"run_dir":"r","round_number":{n},"framework":"Deliberation"}}'
        episodes.append(episode(e, "social_rl", "x", attributes=attributes))
        turns += [
            turn(e, i, "agent", text, actor, internal=actor == "Coach")
            for i, (actor, text) in enumerate(said)
        ]
    # social_rl_feedback rewards 2m - 1 of the feedback means m: A 0.6, 0.4; B 0.5, 0.7
    rounds = {("A", 1): 0.2, ("A", 2): -0.2, ("B", 1): 0.0, ("B", 2): 0.4}
    rewards = [
        reward(
            "agent_round",
            f"social_rl:r/round{n}/{agent}",
            f"social_rl:r/round{n}",
            value,
            "social_rl_feedback@1",
            agent_id=agent,
            round_number=n,
        )
        for (agent, n), value in rounds.items()
    ]
    return tables(gold={"turn_rewards": rewards}, episodes=episodes, turns=turns)


def test_social_rl_round_is_good_when_its_feedback_mean_is_above_the_threshold():
    rows = {r["actor_id"]: r for r in _stepwise(*_social()).iter_rows(named=True)}
    assert rows["A"]["labels"] == [True, False]  # 0.6 > 0.5; 0.4
    assert rows["B"]["labels"] == [False, True]  # 0.5 is not above 0.5; 0.7
    stricter = StepLabels.from_params({"stepwise_label": {"social_rl_feedback_above": 0.65}})
    rows = {r["actor_id"]: r for r in _stepwise(*_social(), stricter).iter_rows(named=True)}
    assert (rows["A"]["labels"], rows["B"]["labels"]) == ([False, False], [False, True])


def test_social_rl_step_is_the_conversation_since_the_agents_previous_step():
    rows = {r["actor_id"]: r for r in _stepwise(*_social()).iter_rows(named=True)}
    assert rows["A"]["episode_id"] == "social_rl:r@A"
    assert rows["A"]["prompt"] == (
        "A discussion (Deliberation). The steps are the turns of A, one per round."
    )
    assert rows["A"]["completions"] == ["A: a1\n\nB: b1\n\nA: a2", "B: b3\n\nA: a3"]
    assert rows["B"]["completions"] == ["A: a1\n\nB: b1", "A: a2\n\nB: b3"]
    assert rows["A"]["turn_ids"] == ["social_rl:r/round1#2", "social_rl:r/round2#1"]
    assert set(rows) == {"A", "B"}  # the coach speaks internally only: no example


def test_an_unknown_label_rule_stops_the_build():
    with pytest.raises(SettingsError, match=r"\[labels\] stepwise: unknown label rule"):
        load_params(overrides={"labels": {"stepwise": "stepwise_label@9"}})


def test_the_shipped_rules_file_names_the_label_rule_and_its_thresholds():
    labels = StepLabels.from_params(load_params())
    assert labels == StepLabels("stepwise_label@1", 0.0, 0.5)


def test_trainability_rejects_what_prms_cannot_train_on():
    rows = pl.DataFrame(
        {
            "episode_id": ["ok", "short", "none", "empty", "null"],
            "prompt": ["p", "p", "p", "p", "p"],
            "completions": [["a", "b"], ["a", "b"], [], ["a", ""], ["a"]],
            "labels": [[True, False], [True], [], [True, True], [None]],
        },
        schema_overrides={"labels": pl.List(pl.Boolean)},
    )
    assert [p for _, p in ranked_problems("stepwise", rows, False)] == [
        (
            "stepwise: 2 rows whose completions and labels are not of equal, non-zero length, "
            "e.g. ['short', 'none']"
        ),
        "stepwise: 1 rows with a null or empty completion, e.g. ['empty']",
        "stepwise: 1 rows with a null label, e.g. ['null']",
    ]
    integer_labels = rows.head(1).with_columns(pl.col("labels").cast(pl.List(pl.Int64)))
    assert [p for _, p in ranked_problems("stepwise", integer_labels, False)] == [
        "stepwise: labels are List(Int64), not a list of booleans"
    ]
