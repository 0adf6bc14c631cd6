"""Conformance: the Social RL source (DESIGN §1 `social_rl`, §3 social_rl bullet), on
hand-written rounds.

Expected values are computed by hand in the comments; nothing calls the code under test to get
them.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from tests.conformance.harness import run_pipeline, write_json

ALICE, MARTA = "Worker+Alice", "Owner+Marta"
MESSAGES = [
    {
        "agent_id": ALICE,
        "content": "We should split the shift.",
        "round_number": 1,
        "turn_number": 1,
    },
    {
        "agent_id": "Coach",
        "content": "Alice, cite the theory.",
        "round_number": 1,
        "turn_number": 2,
        "internal": True,
    },
    {
        "agent_id": MARTA,
        "content": "No, the line starts at eight.",
        "round_number": 1,
        "turn_number": 3,
    },
    {
        "agent_id": ALICE,
        "content": "Then we lose an hour of pay.",
        "round_number": 1,
        "turn_number": 4,
    },
]
FEEDBACK = {
    ALICE: {
        "agent_id": ALICE,
        "round_number": 1,
        "engagement": 0.8,
        "theoretical_alignment": 0.6,
        "contribution_value": 0.7,
    },
    MARTA: {
        "agent_id": MARTA,
        "round_number": 1,
        "engagement": 0.19999999999999998,
        "theoretical_alignment": 0.4,
        "contribution_value": 0.3,
    },
}


def round_file(n: int = 1, **extra) -> dict:
    return {"round_number": n, "messages": MESSAGES, "feedback": FEEDBACK, "synthesis": "", **extra}


def build(tmp_path: Path, files: dict[str, dict]):
    raw = tmp_path / "raw"
    for rel, content in files.items():
        write_json(raw / "outputs" / rel, content)
    return run_pipeline(raw, tmp_path / "data")


def test_agent_round_reward_is_two_times_the_mean_feedback_minus_one(tmp_path):
    built = build(
        tmp_path,
        {"run_a/round1_social_rl.json": round_file(), "run_a/meta.json": {"experiment_id": "e"}},
    )
    rewards = dict(built.gold["turn_rewards"].select("agent_id", "reward").iter_rows())
    # Alice: (0.8 + 0.6 + 0.7) / 3 = 0.7 → 2·0.7 − 1 = 0.4; Marta: (0.2 + 0.4 + 0.3) / 3 = 0.3 →
    # −0.4.
    assert rewards[ALICE] == pytest.approx(0.4)
    assert rewards[MARTA] == pytest.approx(-0.4)


def test_float_noise_in_the_feedback_vector_is_rounded_away(tmp_path):
    built = build(tmp_path, {"run_a/round1_social_rl.json": round_file()})
    marta = built.silver["agent_rounds"].filter(pl.col("agent_id") == MARTA)
    assert marta["engagement"].to_list() == [0.2]


def test_internal_coach_messages_are_kept_in_silver_but_never_released(tmp_path):
    built = build(tmp_path, {"run_a/round1_social_rl.json": round_file()})
    coach = built.silver["turns"].filter(pl.col("actor_id") == "Coach")
    assert coach.select("internal", "text").rows() == [(True, "Alice, cite the theory.")]
    released = json.dumps(
        {name: frame.drop("split").to_dicts() for name, frame in built.datasets.items()},
        default=str,
    )
    assert "cite the theory" not in released


def test_meta_in_a_sibling_file_or_inline_gives_the_same_experiment(tmp_path):
    built = build(
        tmp_path,
        {
            "run_a/round1_social_rl.json": round_file(),
            "run_a/meta.json": {"experiment_id": "exp-7", "social_rl_version": "0.2.0"},
            "run_b/round1_social_rl.json": round_file(
                meta={"experiment_id": "exp-7", "social_rl_version": "0.2.0"}
            ),
        },
    )
    episodes = built.silver["episodes"].sort("episode_id")
    experiments = [json.loads(a)["experiment_id"] for a in episodes["attributes"]]
    assert experiments == ["exp-7", "exp-7"]
    # One experiment is one split group, whichever folder its rounds were written to.
    assert episodes["group_id"].unique().to_list() == ["experiment:exp-7"]


def test_a_run_without_social_rl_version_is_pre_0_2_0(tmp_path):
    built = build(
        tmp_path,
        {"run_a/round1_social_rl.json": round_file(), "run_a/meta.json": {"experiment_id": "e"}},
    )
    attributes = json.loads(built.silver["episodes"]["attributes"][0])
    assert attributes["social_rl_version"] == "pre-0.2.0"


def test_both_policy_adaptation_shapes_are_accepted(tmp_path):
    documented = [
        {
            "agent_id": ALICE,
            "adaptation_type": "activate_cue",
            "cue": "cite",
            "reason": "low alignment",
            "round_number": 2,
        }
    ]
    real = [
        {
            "agent_id": MARTA,
            "role": "Owner",
            "round": 2,
            "deltas": {
                "engagement_delta": 0.1,
                "alignment_delta": -0.35,
                "contribution_delta": 0.04,
            },
        }
    ]
    built = build(
        tmp_path,
        {
            "run_a/round1_social_rl.json": round_file(),
            "run_a/round2_social_rl.json": round_file(2, policy_adaptations=documented + real),
        },
    )
    assert built.silver["quarantine"].height == 0
    deltas = built.gold["agent_round_deltas"].filter(
        pl.col("agent_id") == MARTA, pl.col("round_number") == 2
    )
    assert deltas["reported_alignment_delta"].to_list() == [-0.35]


def test_the_round_reward_lands_on_the_agents_last_message_of_the_round(tmp_path):
    built = build(tmp_path, {"run_a/round1_social_rl.json": round_file()})
    alice = (
        built.datasets["rl_steps"]
        .filter(pl.col("episode_id").str.ends_with("@" + ALICE))
        .sort("step")
    )
    # Alice spoke twice: the first message carries no reward (0.0), the last one her round reward
    # 0.4.
    assert alice.select("step", "is_first", "is_last").rows() == [
        (0, True, False),
        (1, False, True),
    ]
    assert alice["reward"].to_list() == [0.0, pytest.approx(0.4)]
