"""The scenario saved queries against a hand computation on three tiny hand-written scenarios.

SCENARIO-2025-201 (phase_1) has a stale copy left under `active/` whose labels differ: a query
that reads bronze counts it, one that reads silver (the chosen copy) does not. Every expected row
below is worked out by hand from the entries, in the comments next to them.
"""

from __future__ import annotations

import pytest

from pipelines.storage.layout import Layout
from pipelines.warehouse.queries import saved_queries
from pipelines.warehouse.views import query, write_views
from tests.conformance.harness import run_pipeline, write_jsonl


def at(day: int, minute: int) -> str:
    return f"2025-11-{day:02d}T15:{minute:02d}:00Z"


def checkpoint(
    ts: str,
    phase: str,
    number: int,
    *,
    prompt: dict,
    user: str,
    signals: dict,
    quality: dict,
    outcome: dict,
    action: dict | None = None,
    decision: dict | None = None,
    synthesis: int | None = None,
) -> dict:
    context = {"checkpoint_number": number} | (
        {"synthesis_length_words": synthesis} if synthesis else {}
    )
    entry = {
        "timestamp": ts,
        "interaction_type": "checkpoint",
        "phase": phase,
        "context": context,
        "moderator_message": {
            "content": f"Checkpoint {number} of {phase} is ready.",
            "message_type": "checkpoint_prompt",
            "prompt_structure": prompt,
        },
        "user_response": {"content": user, "signals": signals},
        "quality_signals": quality,
        "outcome": outcome,
    }
    if action:
        entry["moderator_action"] = action
    if decision:
        entry["user_decision"] = decision
    return entry


A0 = checkpoint(
    at(1, 0),
    "phase_1",
    1,
    synthesis=150,
    user="Fine, and we opened a plant.",
    prompt={"tone": "collaborative", "synthesis_provided": True, "questions_asked": 2},
    signals={"provided_correction": False, "new_strategic_context": True},
    quality={"checkpoint_timing": "well_timed", "question_quality": "high"},
    outcome={"user_validated": True, "iteration_triggered": False},
    action={"significance_evaluation": "minor", "proposed_action": "proceed"},
    decision={"decision": "proceed", "decision_time_seconds": 10},
)
# A1: user_validated −1 (w 1), major −1 (w 0.5): reward (−1 − 0.5) / 1.5 = −1.0
A1 = checkpoint(
    at(1, 10),
    "phase_1",
    2,
    synthesis=500,
    user="No, the figures are off.",
    prompt={"tone": "directive", "synthesis_provided": False, "questions_asked": 3},
    signals={"provided_correction": True, "correction_magnitude": "major"},
    quality={"checkpoint_timing": "too_early", "question_quality": "low"},
    outcome={"user_validated": False, "iteration_triggered": True},
    action={"significance_evaluation": "major", "proposed_action": "re-round"},
    decision={"decision": "proceed_with_reround", "decision_time_seconds": 30},
)
# A2 revises A1 (same phase, checkpoint 2): validated_output +1 only: reward 1.0
A2 = checkpoint(
    at(1, 20),
    "phase_1",
    2,
    synthesis=450,
    user="Right now.",
    prompt={"tone": "collaborative", "synthesis_provided": True, "questions_asked": 2},
    signals={"provided_correction": False, "validated_output": True},
    quality={"checkpoint_timing": "well_timed"},
    outcome={"iteration_triggered": False},
    action={"significance_evaluation": "minor", "proposed_action": "proceed"},
    decision={"decision": "consult_team", "decision_time_seconds": 20},
)
STALE_A0 = {
    **A0,
    "quality_signals": {"checkpoint_timing": "too_late"},
    "outcome": {"user_validated": True, "iteration_triggered": True},
}
# B0: user_validated −1 (w 1), minor −0.25 (w 0.5): reward (−1 − 0.125) / 1.5 = −0.75
B0 = checkpoint(
    at(2, 0),
    "phase_2",
    1,
    synthesis=900,
    user="That misses our export side.",
    prompt={"tone": "directive", "synthesis_provided": True, "questions_asked": 1},
    signals={"provided_correction": True, "correction_magnitude": "minor"},
    quality={"checkpoint_timing": "too_early"},
    outcome={"user_validated": False, "iteration_triggered": True},
    action={"significance_evaluation": "major", "proposed_action": "re-round"},
    decision={"decision": "proceed_without_reround", "decision_time_seconds": 50},
)
B1 = {
    "timestamp": at(2, 5),
    "interaction_type": "user_correction",
    "user_message": {
        "content": "And the export side is half our sales.",
        "message_type": "user_correction",
    },
}
B2 = checkpoint(
    at(2, 10),
    "phase_2",
    2,
    user="Good.",
    prompt={"tone": "neutral"},
    signals={"provided_correction": False},
    quality={},
    outcome={"user_validated": True, "iteration_triggered": False},
    action={"proposed_action": "proceed"},
    decision={"decision": "accept"},
)
C0 = {
    "timestamp": at(3, 0),
    "interaction_type": "user_correction",
    "user_message": {
        "content": "Before we start: the brief had the wrong region.",
        "message_type": "user_correction",
    },
}
# C1: user_validated −1, satisfaction 0.5 → 0: reward −0.5; C2 revises it: −1 and satisfaction 0 →
# −1: reward −1.0
C1 = {
    "timestamp": at(3, 10),
    "interaction_type": "checkpoint",
    "phase": "phase_3",
    "context": {"checkpoint_number": 1},
    "moderator_message": "Checkpoint one of phase three.",
    "user_response": {"content": "Wrong market again.", "signals": {"provided_correction": True}},
    "outcome": {"user_validated": False, "user_satisfaction_score": 0.5},
}
C2 = {
    "timestamp": at(3, 20),
    "interaction_type": "checkpoint",
    "phase": "phase_3",
    "context": {"checkpoint_number": 1},
    "moderator_message": "Checkpoint one of phase three, revised.",
    "user_response": {"content": "Worse.", "signals": {}},
    "outcome": {"user_validated": False, "user_satisfaction_score": 0.0},
}

FILES = {
    "completed/SCENARIO-2025-201": [A0, A1, A2],
    "active/SCENARIO-2025-201": [STALE_A0],
    "completed/SCENARIO-2025-202": [B0, B1, B2],
    "completed/SCENARIO-2025-203": [C0, C1, C2],
}


@pytest.fixture(scope="module")
def layout(tmp_path_factory: pytest.TempPathFactory) -> Layout:
    root = tmp_path_factory.mktemp("scenario_queries")
    for folder, entries in FILES.items():
        scenario_id = folder.split("/")[1]
        write_jsonl(
            root / "raw" / "scenarios" / folder / "moderator_dialog.jsonl",
            [{**e, "scenario_id": scenario_id} for e in entries],
        )
    run_pipeline(root / "raw", root / "data", release=False)
    out = Layout(root / "data")
    write_views(out)
    return out


def rows(layout: Layout, name: str) -> list[tuple]:
    return query(layout, saved_queries()[name].sql).rows()


def test_checkpoint_timing_vs_iteration_uses_the_seed_label_of_the_chosen_copy(layout):
    assert rows(layout, "checkpoint_timing_vs_iteration") == [
        # (label, checkpoints, with iteration signal, iteration rate, validation rate)
        ("too_early", 2, 2, 1.0, 0.0),  # A1 (iterated, not validated), B0 (iterated, not validated)
        ("well_timed", 2, 2, 0.0, 1.0),  # A0 (validated), A2 (no user_validated: not in the mean)
        ("(not labelled)", 1, 1, 0.0, 1.0),  # B2; the stale copy's "too_late" never counts
    ]


def test_moderator_significance_followed_compares_decisions_by_meaning(layout):
    assert rows(layout, "moderator_significance_followed") == [
        # (call, decisions, followed, overridden, unknown, follow rate over known)
        (
            "major",
            2,
            1,
            1,
            0,
            0.5,
        ),  # A1 re-round ← proceed_with_reround: followed; B0 ← proceed_without_reround: not
        ("minor", 2, 1, 0, 1, 1.0),  # A0 proceed ← proceed; A2 proceed ← consult_team: unknown
        ("(none)", 1, 1, 0, 0, 1.0),  # B2 proceed ← accept
    ]


def test_synthesis_length_vs_validation_buckets_the_seed_synthesis_length(layout):
    assert rows(layout, "synthesis_length_vs_validation") == [
        # (bucket, checkpoints, mean words, judged, validation rate)
        ("a: <200 words", 1, 150.0, 1, 1.0),  # A0 validated
        ("c: 400-799 words", 2, 475.0, 2, 0.5),  # A1 500 not validated, A2 450 validated_output
        (
            "d: 800+ words",
            1,
            900.0,
            1,
            0.0,
        ),  # B0 not validated; B2, C1, C2 have no synthesis length
    ]


def test_checkpoint_worth_users_time_counts_contributions_against_decision_seconds(layout):
    assert rows(layout, "checkpoint_worth_users_time") == [
        # (phase, timing, replies, contributed, rate, mean decision s, decision s per contribution)
        ("phase_1", "too_early", 1, 1, 1.0, 30.0, 30.0),  # A1 correction, 30 s
        (
            "phase_1",
            "well_timed",
            2,
            1,
            0.5,
            15.0,
            30.0,
        ),  # A0 new context 10 s, A2 nothing 20 s: 30 / 1
        (
            "phase_2",
            "(not labelled)",
            1,
            0,
            0.0,
            None,
            None,
        ),  # B2 (B1 is a hook-logged prompt, not a reply)
        ("phase_2", "too_early", 1, 1, 1.0, 50.0, 50.0),  # B0 correction, 50 s
        (
            "phase_3",
            "(not labelled)",
            1,
            1,
            1.0,
            None,
            None,
        ),  # C1 correction without a decision time
    ]


def test_moderator_behaviour_outcomes_relates_each_behaviour_to_validation_and_correction(layout):
    # validated: A0 1, A1 0, A2 1 (validated_output), B0 0, B2 1; corrected: A1, B0 (C's plain
    # strings carry no behaviour)
    assert rows(layout, "moderator_behaviour_outcomes") == [
        ("message_type", "checkpoint_prompt", 5, 5, 0.6, 0.4),
        ("proposed_action", "proceed", 3, 3, 1.0, 0.0),  # A0, A2, B2
        ("proposed_action", "re-round", 2, 2, 0.0, 1.0),  # A1, B0
        ("question_quality", "high", 1, 1, 1.0, 0.0),
        ("question_quality", "low", 1, 1, 0.0, 1.0),
        ("questions_asked", "1", 1, 1, 0.0, 1.0),
        ("questions_asked", "2", 2, 2, 1.0, 0.0),
        ("questions_asked", "3", 1, 1, 0.0, 1.0),
        ("synthesis_provided", "false", 1, 1, 0.0, 1.0),
        ("synthesis_provided", "true", 3, 3, 0.667, 0.333),  # A0, A2, B0
        ("tone", "collaborative", 2, 2, 1.0, 0.0),
        ("tone", "directive", 2, 2, 0.0, 1.0),
        ("tone", "neutral", 1, 1, 1.0, 0.0),
    ]


def test_correction_pair_yield_says_what_each_labelled_correction_gives(layout):
    assert rows(layout, "correction_pair_yield") == [
        # (yield, corrections, corrected answers, mean reward corrected, mean reward revised)
        ("a: pair", 1, 1, -1.0, 1.0),  # A1 corrected (−1.0), revised by A2 (1.0)
        (
            "b: revision rewarded lower (dropped)",
            1,
            1,
            -0.5,
            -1.0,
        ),  # C1 (−0.5) revised by C2 (−1.0)
        (
            "c: no revised answer",
            2,
            1,
            -0.75,
            None,
        ),  # B0 reply and hook B1, both correct B0 (−0.75)
        (
            "d: nothing to correct (no earlier moderator turn)",
            1,
            0,
            None,
            None,
        ),  # C0 before any moderator turn
    ]
