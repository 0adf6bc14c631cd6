"""Conformance: Social RL's learning loop as data (issue 18) on hand-written runs.

Policy states (both shapes) → silver `policy_states`; adaptations (both shapes) → `decisions`;
the coach-level view in `rl_steps`; run attachments. Expected rows are written by hand.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest

from pipelines.release.trainability.folder import trainability_problems
from pipelines.storage.layout import Layout
from pipelines.warehouse.queries import saved_queries
from pipelines.warehouse.views import query, write_views
from tests.conformance.harness import run_pipeline, write_json

ALICE, MARTA = "Worker+Alice", "Owner+Marta"
REAL = Path(__file__).parents[3] / "shared" / "real_samples" / "social_rl" / "Socratic-RCM"


def vector(agent: str, n: int, engagement: float, alignment: float, contribution: float) -> dict:
    return {
        "agent_id": agent,
        "round_number": n,
        "engagement": engagement,
        "theoretical_alignment": alignment,
        "contribution_value": contribution,
    }


def round_file(n: int, feedback: list[dict], adaptations: list[dict] | None = None) -> dict:
    messages = [
        {"agent_id": v["agent_id"], "content": f"{v['agent_id']} in round {n}", "turn_number": i}
        for i, v in enumerate(feedback)
    ]
    return {
        "round_number": n,
        "messages": messages,
        "feedback": {v["agent_id"]: v for v in feedback},
        "policy_adaptations": adaptations or [],
    }


DOCUMENTED = {
    "agent_id": ALICE,
    "adaptation_type": "activate_cue",
    "cue": "emphasize_non_domination",
    "reason": "engagement low, alignment below threshold",
    "round_number": 1,
    "feedback_trigger": {"engagement": 0.3, "alignment": 0.4},
}
DELTAS = {
    "agent_id": MARTA,
    "role": "Owner",
    "deltas": {"engagement_delta": 0.0, "alignment_delta": -0.35, "contribution_delta": 0.04},
    "round": 2,
}


def build(tmp_path: Path, files: dict[str, dict]):
    raw = tmp_path / "raw"
    for rel, content in files.items():
        write_json(raw / "outputs" / rel, content)
    return run_pipeline(raw, tmp_path / "data")


def three_rounds() -> dict[str, dict]:
    return {
        "run/round1_social_rl.json": round_file(
            1, [vector(ALICE, 1, 0.3, 0.4, 0.5), vector(MARTA, 1, 0.8, 0.7, 0.16)], [DOCUMENTED]
        ),
        "run/round2_social_rl.json": round_file(
            2, [vector(ALICE, 2, 0.6, 0.4, 0.5), vector(MARTA, 2, 0.8, 0.35, 0.2)], [DELTAS]
        ),
        "run/round3_social_rl.json": round_file(
            3,
            [vector(ALICE, 3, 0.6, 0.5, 0.5), vector(MARTA, 3, 0.9, 0.35, 0.2)],
            [DOCUMENTED | {"adaptation_type": "deactivate_cue", "round_number": 3}],
        ),
    }


# ---------------------------------------------------------------- policy states


def test_documented_policy_state_gives_one_row_per_role_and_cue(tmp_path):
    state = {
        "framework_option": "A",
        "framework_name": "Class Conflict / Alienation",
        "policies": [
            {
                "role": "Worker",
                "cues_active": ["reflect_on_alienation", "connect_to_labor"],
                "cue_states": {
                    "reflect_on_alienation": {
                        "cue_id": "reflect_on_alienation",
                        "active": True,
                        "intensity": 0.8,
                        "last_triggered": "2025-11-23T17:58:25",
                    },
                    "challenge": {"active": False, "intensity": 0.2},
                },
                "feedback_snapshot": {"engagement": 0.7},
            }
        ],
        "timestamp": "2025-11-23T17:58:25",
        "source_run_id": "2025-11-23_baseline_full_qwen",
        "social_rl_version": "0.2.0",
    }
    built = build(
        tmp_path,
        {
            "run/round1_social_rl.json": three_rounds()["run/round1_social_rl.json"],
            "run/policy_state.json": state,
        },
    )
    rows = built.silver["policy_states"].sort("policy_state_id")
    assert rows.select("policy_state_id", "role", "cue_id", "active", "intensity").rows() == [
        ("social_rl:run/policy_state#Worker/0", "Worker", "reflect_on_alienation", True, 0.8),
        ("social_rl:run/policy_state#Worker/1", "Worker", "challenge", False, 0.2),
        # only listed in cues_active: active, nothing else known
        ("social_rl:run/policy_state#Worker/2", "Worker", "connect_to_labor", True, None),
    ]
    first = rows.row(0, named=True)
    assert (first["shape"], first["source_run_id"], first["framework_option"]) == (
        "documented",
        "2025-11-23_baseline_full_qwen",
        "A",
    )
    assert first["last_triggered"].isoformat() == "2025-11-23T17:58:25+00:00"
    assert json.loads(first["feedback_snapshot"]) == {"engagement": 0.7}


def test_per_role_policy_state_names_cues_by_mode_and_keeps_thresholds(tmp_path):
    state = {
        "Worker": {
            "name": "worker_baseline",
            "cues": [
                {
                    "mode": "observe",
                    "text": "Notice the directive.",
                    "intensity": 0.3,
                    "grounding": "",
                },
                {
                    "mode": "connect",
                    "text": "What does compliance mean here?",
                    "intensity": 0.7,
                    "grounding": "Non-domination requires understanding power dynamics",
                },
            ],
            "thresholds": {"engagement": 0.3},
        },
        "Owner": {"name": "owner_baseline", "cues": [], "thresholds": {}},
    }
    built = build(
        tmp_path,
        {
            "run/round1_social_rl.json": three_rounds()["run/round1_social_rl.json"],
            "run/policy_state.json": state,
        },
    )
    rows = built.silver["policy_states"].sort("policy_state_id")
    assert rows.select(
        "policy_state_id",
        "policy_name",
        "cue_id",
        "mode",
        "text",
        "active",
        "intensity",
        "grounding",
        "thresholds",
    ).rows() == [
        (
            "social_rl:run/policy_state#Owner/-",
            "owner_baseline",
            None,
            None,
            None,
            None,
            None,
            None,
            None,
        ),
        (
            "social_rl:run/policy_state#Worker/0",
            "worker_baseline",
            "observe",
            "observe",
            "Notice the directive.",
            None,
            0.3,
            None,
            '{"engagement":0.3}',
        ),
        (
            "social_rl:run/policy_state#Worker/1",
            "worker_baseline",
            "connect",
            "connect",
            "What does compliance mean here?",
            None,
            0.7,
            "Non-domination requires understanding power dynamics",
            '{"engagement":0.3}',
        ),
    ]
    assert set(rows["shape"]) == {"per_role"}


def test_a_policy_state_with_an_out_of_range_intensity_is_quarantined(tmp_path):
    state = {"Worker": {"name": "w", "cues": [{"mode": "observe", "intensity": 1.5}]}}
    built = build(tmp_path, {"run/policy_state.json": state})
    quarantine = built.silver["quarantine"]
    assert quarantine.select("file", "locator", "error_kind").rows() == [
        ("outputs/run/policy_state.json", "['Worker'].cues[0]", "bad_value")
    ]
    assert built.silver["policy_states"].height == 0


# ---------------------------------------------------------------- adaptations as decisions


def test_both_adaptation_shapes_become_coach_decisions(tmp_path):
    built = build(tmp_path, three_rounds())
    decisions = built.silver["decisions"].sort("decision_id")
    assert decisions.select(
        "decision_id", "actor_id", "actor_type", "action", "reasoning"
    ).rows() == [
        (
            "social_rl:run/round1#adaptation0",
            ALICE,
            "coach",
            "activate_cue:emphasize_non_domination",
            "engagement low, alignment below threshold",
        ),
        # deltas 0.0 / −0.35 / +0.04 → the runner's sign rule
        (
            "social_rl:run/round2#adaptation0",
            MARTA,
            "coach",
            "adapt_policy:engagement=,alignment-,contribution+",
            None,
        ),
        (
            "social_rl:run/round3#adaptation0",
            ALICE,
            "coach",
            "deactivate_cue:emphasize_non_domination",
            "engagement low, alignment below threshold",
        ),
    ]
    contexts = dict(built.silver["contexts"].select("context_hash", "context").iter_rows())
    state = json.loads(contexts[decisions["context_hash"][0]])
    assert state == {
        "agent_id": ALICE,
        "round_number": 1,
        "feedback": {"engagement": 0.3, "theoretical_alignment": 0.4, "contribution_value": 0.5},
        "feedback_trigger": {"engagement": 0.3, "alignment": 0.4},
        "deltas": None,
    }
    marta = json.loads(contexts[decisions["context_hash"][1]])
    assert marta["deltas"] == {
        "engagement_delta": 0.0,
        "alignment_delta": -0.35,
        "contribution_delta": 0.04,
    }


def test_the_triggering_feedback_rows_link_to_the_adaptation(tmp_path):
    built = build(tmp_path, three_rounds())
    feedback = built.silver["feedback"]
    linked = feedback.filter(pl.col("decision_id").is_not_null())
    # Alice's three round-1 signals, Marta's three round-2 signals, Alice's three round-3 signals.
    assert sorted(set(linked.select("episode_id", "agent_id", "decision_id").rows())) == [
        ("social_rl:run/round1", ALICE, "social_rl:run/round1#adaptation0"),
        ("social_rl:run/round2", MARTA, "social_rl:run/round2#adaptation0"),
        ("social_rl:run/round3", ALICE, "social_rl:run/round3#adaptation0"),
    ]
    assert linked.height == 9
    decision = built.silver["decisions"].filter(
        pl.col("decision_id") == "social_rl:run/round2#adaptation0"
    )
    trigger = json.loads(decision["attributes"][0])["trigger_feedback_ids"]
    marta_round2 = feedback.filter(
        (pl.col("episode_id") == "social_rl:run/round2") & (pl.col("agent_id") == MARTA)
    )
    assert trigger == sorted(marta_round2["feedback_id"].to_list())


# ---------------------------------------------------------------- coach-level RL view


def test_coach_reward_is_the_weighted_change_of_the_next_round(tmp_path):
    built = build(tmp_path, three_rounds())
    rows = built.gold["turn_rewards"].filter(pl.col("target") == "coach_step")
    rewards = {(r["agent_id"], r["round_number"]): r["reward"] for r in rows.iter_rows(named=True)}
    # engagement and alignment weigh 1, contribution 0: mean of the two changes r → r+1.
    assert rewards == {
        (ALICE, 1): pytest.approx(((0.6 - 0.3) + (0.4 - 0.4)) / 2),  # 0.15
        (ALICE, 2): pytest.approx(((0.6 - 0.6) + (0.5 - 0.4)) / 2),  # 0.05
        (MARTA, 1): pytest.approx(((0.8 - 0.8) + (0.35 - 0.7)) / 2),  # −0.175
        (MARTA, 2): pytest.approx(((0.9 - 0.8) + (0.35 - 0.35)) / 2),  # 0.05
    }
    assert set(rows["reward_rule"]) == {"social_rl_adaptation_effect@1"}
    # the reward of a round with one adaptation names it
    alice1 = rows.filter((pl.col("agent_id") == ALICE) & (pl.col("round_number") == 1))
    assert alice1["decision_id"].to_list() == ["social_rl:run/round1#adaptation0"]


def test_coach_episodes_are_whole_with_the_adaptation_as_action(tmp_path):
    built = build(tmp_path, three_rounds())
    steps = (
        built.datasets["rl_steps"].filter(pl.col("policy") == "coach").sort("episode_id", "step")
    )
    alice = steps.filter(pl.col("episode_id") == "social_rl:run@Worker+Alice#coach")
    assert alice.select("step", "action", "is_first", "is_last", "is_terminal").rows() == [
        (0, "activate_cue:emphasize_non_domination", True, False, False),
        (1, "none", False, False, False),
        (2, "deactivate_cue:emphasize_non_domination", False, True, False),
    ]
    assert alice["reward"].to_list() == [pytest.approx(0.15), pytest.approx(0.05), 0.0]
    observations = [json.loads(o) for o in alice["observation"]]
    assert observations[0] == {
        "round": 1,
        "role": "Worker",
        "feedback": {"engagement": 0.3, "theoretical_alignment": 0.4, "contribution_value": 0.5},
        "cues_active": [],
    }
    # activated in round 1, so active when round 2 and 3 are observed
    assert [o["cues_active"] for o in observations[1:]] == [["emphasize_non_domination"]] * 2
    marta = steps.filter(pl.col("episode_id") == "social_rl:run@Owner+Marta#coach")
    assert marta["action"].to_list() == [
        "none",
        "adapt_policy:engagement=,alignment-,contribution+",
        "none",
    ]
    # no cue adaptations are ever recorded for Marta: her active cues are unknown
    assert {json.loads(o)["cues_active"] for o in marta["observation"]} == {None}
    assert trainability_problems(built.release) == []


# ---------------------------------------------------------------- attachments and the query


def test_other_files_of_a_run_folder_are_kept_as_attachments(tmp_path):
    raw = tmp_path / "raw"
    write_json(
        raw / "outputs/run/round1_social_rl.json", three_rounds()["run/round1_social_rl.json"]
    )
    write_json(raw / "outputs/run/agents.json", [{"identifier": ALICE}])
    (raw / "outputs/run/social_rl_report.txt").write_text("SOCIAL RL SIMULATION REPORT\n")
    (raw / "outputs/run/plot.png").write_bytes(b"\x89PNG")
    built = run_pipeline(raw, tmp_path / "data")
    attributes = json.loads(built.silver["episodes"]["attributes"][0])
    assert attributes["attachments"] == [
        "outputs/run/agents.json",
        "outputs/run/social_rl_report.txt",
    ]
    layout = Layout(built.settings.data_root)
    write_views(layout)
    unrecognised = query(layout, "SELECT name, content FROM bronze.social_rl_attachments")
    assert sorted(unrecognised.rows()) == [
        ("agents.json", json.dumps([{"identifier": ALICE}], indent=2)),
        ("social_rl_report.txt", "SOCIAL RL SIMULATION REPORT\n"),
    ]


def test_saved_query_counts_adaptations_followed_by_higher_engagement_or_alignment(tmp_path):
    built = build(tmp_path, three_rounds())
    layout = Layout(built.settings.data_root)
    write_views(layout)
    rows = query(layout, saved_queries()["adaptations_followed_by_gains"].sql)
    assert rows.select(
        "role",
        "adaptation_type",
        "cue",
        "adaptations",
        "measured",
        "engagement_higher",
        "alignment_higher",
        "either_higher",
    ).rows() == [
        # Marta round 2 → 3: engagement 0.8 → 0.9 higher, alignment unchanged
        ("Owner", "adapt_policy", "engagement=,alignment-,contribution+", 1, 1, 1, 0, 1),
        # Alice round 1 → 2: engagement 0.3 → 0.6; round 3 has no next round
        ("Worker", "activate_cue", "emphasize_non_domination", 1, 1, 1, 0, 1),
        ("Worker", "deactivate_cue", "emphasize_non_domination", 1, 0, 0, 0, 0),
    ]


# ---------------------------------------------------------------- the real run


@pytest.mark.skipif(not REAL.exists(), reason="../shared/real_samples is not checked out")
def test_real_run_ingests_with_nothing_quarantined_and_its_adaptations_are_decisions(tmp_path):
    shutil.copytree(REAL, tmp_path / "raw")
    built = run_pipeline(tmp_path / "raw", tmp_path / "data")
    assert built.silver["quarantine"].height == 0
    decisions = built.silver["decisions"].sort("decision_id")
    # round2_social_rl.json lists three deltas-only adaptations (Marta, Alice, Ben)
    assert decisions.select("actor_id", "action").rows() == [
        ("Owner+Marta", "adapt_policy:engagement=,alignment-,contribution+"),
        ("Worker+Alice", "adapt_policy:engagement=,alignment=,contribution="),
        ("Worker+Ben", "adapt_policy:engagement=,alignment=,contribution-"),
    ]
    coach = built.datasets["rl_steps"].filter(pl.col("policy") == "coach")
    assert coach.group_by("episode_id").len()["len"].to_list() == [2, 2, 2]
    assert trainability_problems(built.release) == []
