"""Every default reward rule against hand-computed examples on tiny silver frames."""

import orjson
import polars as pl
import pytest

from pipelines.gold.rules import run_rule
from tests.unit._gold_helpers import params, silver_tables

EP = "dialogue:d/c"


def _fb(
    fid,
    name,
    value,
    *,
    episode=EP,
    turn=None,
    target="turn",
    text=None,
    scale="[-1,1]",
    kind="human",
    **extra,
):
    return {
        "feedback_id": fid,
        "episode_id": episode,
        "turn_id": turn,
        "target": target,
        "name": name,
        "value_num": value,
        "value_text": text,
        "scale": scale,
        "source_kind": kind,
        **extra,
    }


def _turn(tid, role, episode=EP, index=0, **extra):
    return {
        "turn_id": tid,
        "episode_id": episode,
        "turn_index": index,
        "role": role,
        "internal": False,
        **extra,
    }


def _by_target(frame: pl.DataFrame) -> dict:
    return {row["target_id"]: row for row in frame.iter_rows(named=True)}


def test_dialogue_reward_wins_over_rating_and_events_are_averaged():
    silver = silver_tables(
        turns=[_turn(f"{EP}#1", "assistant", index=1)],
        feedback=[
            _fb("dialogue:e1:rating", "rating", 1.0, turn=f"{EP}#1"),
            _fb(
                "dialogue:e1:reward", "reward", 0.6, turn=f"{EP}#1"
            ),  # same event: reward wins → 0.6
            _fb("dialogue:e2:rating", "rating", -1.0, turn=f"{EP}#1"),  # → -0.8
        ],
    )
    row = _by_target(run_rule("dialogue_feedback@1", silver, params()))[f"{EP}#1"]
    assert row["reward"] == pytest.approx((0.6 - 0.8) / 2)
    assert row["n_signals"] == 2 and row["aggregation"] == "mean"
    assert row["feedback_ids"] == ["dialogue:e1:rating", "dialogue:e1:reward", "dialogue:e2:rating"]
    assert row["reward_rule"] == "dialogue_feedback@1"


def test_dialogue_feedback_on_a_user_turn_gives_no_reward():
    silver = silver_tables(
        turns=[_turn(f"{EP}#0", "user")],
        feedback=[_fb("dialogue:e1:rating", "rating", 1.0, turn=f"{EP}#0")],
    )
    assert run_rule("dialogue_feedback@1", silver, params()).height == 0


def test_dialogue_rating_map_and_aggregation_come_from_parameters():
    silver = silver_tables(
        turns=[_turn(f"{EP}#1", "assistant", index=1)],
        feedback=[
            _fb("dialogue:e1:rating", "rating", 1.0, turn=f"{EP}#1"),
            _fb("dialogue:e2:rating", "rating", 0.0, turn=f"{EP}#1"),
        ],
    )
    custom = params(dialogue_feedback={"rating_map": {"1": 1.0}}, aggregation={"method": "max"})
    row = run_rule("dialogue_feedback@1", silver, custom).row(0, named=True)
    assert row["reward"] == 1.0 and row["aggregation"] == "max"


def test_dialogue_episode_rating_is_an_episode_reward():
    silver = silver_tables(feedback=[_fb("dialogue:e3:rating", "rating", -1.0, target="episode")])
    row = run_rule("dialogue_feedback@1", silver, params()).row(0, named=True)
    assert (row["target"], row["target_id"], row["reward"]) == ("episode", EP, -0.8)


S = "study:s1"


def _judge(step, stance, conf=0.9):
    return _fb(
        f"j{step}",
        "judge_stance",
        conf,
        episode=S,
        turn=f"{S}#{2 * step - 1}",
        text=stance,
        scale="category",
        kind="judge",
        decision_id=f"d{step}",
        attributes=f'{{"step":{step}}}',
    )


def _step(step, policy, q):
    return {
        "decision_id": f"d{step}",
        "episode_id": S,
        "turn_id": f"{S}#{2 * step}",
        "action": policy,
        "candidates": [{"action": a, "value": v} for a, v in q.items()],
    }


def _study(end_reason, stances):
    return silver_tables(
        episodes=[
            {
                "episode_id": S,
                "source": "study",
                "native_id": "s1",
                "group_id": "p",
                "n_turns": 9,
                "end_reason": end_reason,
                "source_file": "f",
            }
        ],
        feedback=[_judge(i + 1, s) for i, s in enumerate(stances)],
        decisions=[
            _step(i + 1, "bob", {"bob": 1.0, "ross": 1.2, "ana": 0.5}) for i in range(len(stances))
        ],
    )


@pytest.mark.parametrize(
    ("end_reason", "expected"), [("agreement", 1.0), ("refusal", -1.0), ("max_turns", 0.0)]
)
def test_study_terminal_reward_follows_the_derived_end_reason(end_reason, expected):
    row = run_rule("study_terminal@2", _study(end_reason, ["NEUTRAL", "AGREE"]), params()).row(
        0, named=True
    )
    assert (row["target"], row["reward"], row["feedback_ids"]) == (
        "episode",
        expected,
        ["j1", "j2"],
    )


def test_study_unknown_end_reason_gives_no_terminal_reward():
    assert run_rule("study_terminal@2", _study("unknown", ["NEUTRAL"]), params()).height == 0


def test_study_step_reward_is_the_half_stance_change_after_the_step_with_q_columns():
    rows = _by_target(
        run_rule(
            "study_stance_step@2",
            _study("agreement", ["REFUSE", "NEUTRAL", "AGREE", "DELAY"]),
            params(),
        )
    )
    # step k is rewarded by the stance change from step k to step k+1; the last step has no next
    # stance.
    assert {k: r["reward"] for k, r in rows.items()} == {"d1": 0.5, "d2": 0.5, "d3": -0.5}
    d1 = rows["d1"]
    assert d1["feedback_ids"] == ["j1", "j2"] and d1["turn_id"] == f"{S}#2"
    assert (
        d1["selected_policy"],
        d1["q_selected"],
        d1["best_alternative"],
        d1["q_best_alternative"],
    ) == ("bob", 1.0, "ross", 1.2)
    assert d1["q_margin"] == pytest.approx(-0.2)


SC = "scenario:S-1"


def test_scenario_turn_reward_is_the_weighted_mean_of_mapped_outcome_signals():
    turn = f"{SC}#0"
    silver = silver_tables(
        feedback=[
            _fb("v", "user_validated", 1.0, episode=SC, turn=turn, scale="bool"),  # +1 × 1
            _fb(
                "s", "user_satisfaction_score", 0.75, episode=SC, turn=turn, scale="[0,1]"
            ),  # +0.5 × 1
            _fb(
                "c",
                "correction_magnitude",
                None,
                episode=SC,
                turn=turn,
                text="major",
                scale="category",
                kind="system",
            ),  # -1 × 0.5
            _fb(
                "m",
                "moderator_effectiveness",
                None,
                episode=SC,
                turn=turn,
                text="Excellent",
                scale="category",
                kind="self",
            ),  # +1 × 0.25
        ],
        decisions=[
            {
                "decision_id": "x",
                "episode_id": SC,
                "suggestion_followed": False,
                "attributes": f'{{"moderator_turn_id":"{turn}"}}',
            }
        ],
    )
    row = run_rule("scenario_outcome@2", silver, params()).row(0, named=True)
    assert row["reward"] == pytest.approx((1 + 0.5 - 0.5 + 0.25) / 2.75)
    assert row["n_signals"] == 4 and row["suggestion_followed"] is False
    # The agreement signal enters the reward only with a weight.
    weighted = run_rule(
        "scenario_outcome@2",
        silver,
        params(scenario_outcome={"weights": {"followed_proposal": 1.0}}),
    )
    assert weighted["reward"][0] == pytest.approx((1 + 0.5 - 0.5 + 0.25 - 1) / 3.75)


def test_scenario_metadata_line_gives_an_episode_reward():
    silver = silver_tables(
        feedback=[
            _fb(
                "ok",
                "scenario_successful",
                0.0,
                episode=SC,
                target="episode",
                scale="bool",
                kind="outcome",
            ),
            _fb(
                "sat", "user_satisfaction_overall", 0.9, episode=SC, target="episode", scale="[0,1]"
            ),
        ]
    )
    row = run_rule("scenario_episode@1", silver, params()).row(0, named=True)
    assert (row["target"], row["reward"]) == ("episode", pytest.approx((-1 + 0.8) / 2))


def test_social_rl_reward_is_the_signed_weighted_mean_of_the_feedback_vector():
    ep = "social_rl:run/round2"
    vector = {"engagement": 1.0, "theoretical_alignment": 0.5, "contribution_value": 0.0}
    silver = silver_tables(
        feedback=[
            _fb(
                n,
                n,
                v,
                episode=ep,
                target="agent_round",
                agent_id="Worker+A",
                scale="[0,1]",
                kind="system",
            )
            for n, v in vector.items()
        ],
        agent_rounds=[{"episode_id": ep, "agent_id": "Worker+A", "round_number": 2}],
    )
    row = run_rule("social_rl_feedback@1", silver, params()).row(0, named=True)
    assert row["reward"] == pytest.approx(0.0) and row["round_number"] == 2
    reweighted = run_rule(
        "social_rl_feedback@1",
        silver,
        params(social_rl_feedback={"weights": {"contribution_value": 0.0}}),
    )
    assert reweighted["reward"][0] == pytest.approx(2 * 0.75 - 1)


DE = "decision:sess"


def _decision_fb(fid, decision, name, value, scale, evidence="value", reading="ok"):
    return _fb(
        fid,
        name,
        value,
        episode=DE,
        target="decision",
        scale=scale,
        decision_id=decision,
        attributes=orjson.dumps({"scale_evidence": evidence, "reading": reading}).decode(),
    )


@pytest.mark.parametrize(
    ("value", "scale", "expected"), [(4.0, "1-5", 0.5), (1.0, "1-5", -1.0), (0.25, "[0,1]", -0.5)]
)
def test_decision_rating_is_normalized_by_its_scale(value, scale, expected):
    silver = silver_tables(
        feedback=[_decision_fb("r", "d", "rating", value, scale)],
        decisions=[{"decision_id": "d", "episode_id": DE}],
    )
    assert run_rule("decision_outcome@2", silver, params())["reward"][0] == pytest.approx(expected)


def test_decision_rating_wins_over_was_good_which_is_the_fallback_and_inference_is_flagged():
    silver = silver_tables(
        feedback=[
            _decision_fb("r", "d1", "rating", 1.0, "1-5", evidence="was_good_decision"),
            _decision_fb("g1", "d1", "was_good_decision", 0.0, "bool"),
            _decision_fb("g2", "d2", "was_good_decision", 1.0, "bool"),
        ],
        decisions=[
            {
                "decision_id": "d1",
                "episode_id": DE,
                "suggested_action": "POST",
                "suggestion_followed": False,
            },
            {"decision_id": "d2", "episode_id": DE},
        ],
    )
    rows = _by_target(run_rule("decision_outcome@2", silver, params()))
    assert rows["d1"]["reward"] == -1.0 and rows["d1"]["feedback_ids"] == ["r"]
    assert (
        rows["d1"]["flags"] == ["rating_scale_inferred"]
        and rows["d1"]["suggestion_followed"] is False
    )
    assert rows["d2"]["reward"] == 1.0 and rows["d2"]["flags"] is None


@pytest.mark.parametrize("reading", ["scale_unknown", "off_scale", "contradicts_was_good_decision"])
def test_an_unreadable_decision_rating_gives_no_reward_not_even_from_was_good(reading):
    silver = silver_tables(
        feedback=[
            _decision_fb("r", "d1", "rating", 1.0, "unknown", evidence="none", reading=reading),
            _decision_fb("g1", "d1", "was_good_decision", 1.0, "bool"),
        ],
        decisions=[{"decision_id": "d1", "episode_id": DE}],
    )
    assert run_rule("decision_outcome@2", silver, params()).height == 0
