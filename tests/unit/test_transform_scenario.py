"""Scenario bronze → silver: turns, feedback targets, decisions, chosen copies, contract
validity."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime

import polars as pl
import pytest

from pipelines.config.settings import Settings
from pipelines.schemas import conform, frame_from_rows, polars_schema, silver_schema
from pipelines.schemas.bronze.scenario import BRONZE_MODELS
from pipelines.schemas.silver import SILVER_MODELS
from pipelines.transforms.scenario import to_silver

A = "scenarios/completed/SCENARIO-2025-001/moderator_dialog.jsonl"
A_COPY = "scenarios/active/SCENARIO-2025-001/moderator_dialog.jsonl"
B = "scenarios/active/SCENARIO-2025-002/moderator_dialog.jsonl"


def ts(minute: int) -> datetime:
    return datetime(2025, 11, 21, 15, minute, tzinfo=UTC)


def entry(file: str, index: int, **fields) -> dict:
    state, scenario_id = file.split("/")[1:3]
    return {
        "file": file,
        "locator": f"line {index + 1} (byte {index * 100})",
        "record_index": index,
        "state": state,
        "scenario_id": scenario_id,
        "ts": ts(index),
        "user_first": False,
        **fields,
    }


ENTRIES = [
    entry(
        A,
        0,
        interaction_type="checkpoint",
        moderator_text="Round 1 complete. Corrections?",
        user_text="Revenue is $900M.",
        proposed_action="re-round",
        user_decision="proceed_without_reround",
        user_validated=True,
        user_satisfaction_score=0.8,
        correction_magnitude="moderate",
        moderator_effectiveness="good",
        context='{"checkpoint_number":1}',
    ),
    entry(
        A,
        1,
        interaction_type="user_correction",
        user_text="Also, change the supplier risk.",
        user_validated=False,
    ),
    entry(
        A,
        2,
        interaction_type="user_question",
        user_first=True,
        user_text="Why phase 3?",
        moderator_text="Because regulation is a driving force.",
        proposed_action="Advance Phase",
        user_decision="advance-phase",
        user_satisfaction_score=1.0,
        context='{"checkpoint_number":1}',
    ),
    entry(
        B, 0, interaction_type="user_input", user_text="Start with housing.", user_validated=True
    ),
    entry(
        B,
        1,
        interaction_type="checkpoint",
        moderator_text="Round 1 done.",
        user_text="ok",
        user_decision="accept",
    ),
]
A_COPY_ENTRIES = [entry(A_COPY, 0, moderator_text="Round 1 complete. Corrections?")]
METADATA = [
    {
        "file": A,
        "locator": "line 4 (byte 400)",
        "record_index": 3,
        "state": "completed",
        "scenario_id": "SCENARIO-2025-001",
        "ts": ts(30),
        "scenario_successful": True,
        "user_satisfaction_overall": 0.9,
        "metadata": '{"scenario_successful":true}',
    }
]


def bronze(entries: list[dict], metadata: list[dict]) -> dict[str, pl.LazyFrame]:
    rows = {"scenario_entries": entries, "scenario_metadata": metadata}
    return {
        name: frame_from_rows(rows[name], polars_schema(model)).lazy()
        for name, model in BRONZE_MODELS.items()
    }


@pytest.fixture(scope="module")
def silver() -> dict[str, pl.DataFrame]:
    out = to_silver(bronze(ENTRIES + A_COPY_ENTRIES, METADATA), Settings())
    return {t: conform(f, silver_schema(t)).collect() for t, f in out.items()}


def test_every_output_table_validates_against_the_silver_models(silver):
    for name, frame in silver.items():
        SILVER_MODELS[name].validate(frame, lazy=True)


def test_empty_bronze_gives_empty_valid_tables():
    out = to_silver(bronze([], []), Settings())
    for name, frame in out.items():
        df = SILVER_MODELS[name].validate(conform(frame, silver_schema(name)).collect(), lazy=True)
        assert df.height == 0


def test_turns_run_across_the_scenario_moderator_first_unless_the_user_asked(silver):
    turns = (
        silver["turns"]
        .filter(pl.col("episode_id") == "scenario:SCENARIO-2025-001")
        .sort("turn_index")
    )
    assert turns.select("turn_id", "role", "native_role", "text").rows() == [
        (
            "scenario:SCENARIO-2025-001#0",
            "assistant",
            "moderator",
            "Round 1 complete. Corrections?",
        ),
        ("scenario:SCENARIO-2025-001#1", "user", "user", "Revenue is $900M."),
        ("scenario:SCENARIO-2025-001#2", "user", "user", "Also, change the supplier risk."),
        ("scenario:SCENARIO-2025-001#3", "user", "user", "Why phase 3?"),
        (
            "scenario:SCENARIO-2025-001#4",
            "assistant",
            "moderator",
            "Because regulation is a driving force.",
        ),
    ]


def test_only_the_chosen_copy_of_a_scenario_feeds_silver(silver):
    episode = (
        silver["episodes"].filter(pl.col("native_id") == "SCENARIO-2025-001").row(0, named=True)
    )
    assert episode["source_file"] == A
    assert json.loads(episode["attributes"])["other_copies"] == [A_COPY]
    assert silver["turns"].filter(pl.col("episode_id") == "scenario:SCENARIO-2025-001").height == 5


def test_episode_ids_groups_times_and_end_reasons(silver):
    rows = (
        silver["episodes"]
        .sort("episode_id")
        .select("episode_id", "group_id", "n_turns", "end_reason", "started_at", "ended_at")
        .rows()
    )
    assert rows == [
        ("scenario:SCENARIO-2025-001", "SCENARIO-2025-001", 5, "success", ts(0), ts(30)),
        ("scenario:SCENARIO-2025-002", "SCENARIO-2025-002", 3, "in_progress", ts(0), ts(1)),
    ]


def feedback_of(silver: dict, name: str) -> list[tuple]:
    return (
        silver["feedback"]
        .filter(pl.col("name") == name)
        .sort("observed_at", "episode_id")
        .select(
            "episode_id", "turn_id", "target", "value_num", "value_text", "scale", "source_kind"
        )
        .rows()
    )


def test_user_validated_targets_the_moderator_turn_it_judges_or_the_episode(silver):
    assert feedback_of(silver, "user_validated") == [
        (
            "scenario:SCENARIO-2025-001",
            "scenario:SCENARIO-2025-001#0",
            "turn",
            1.0,
            None,
            "bool",
            "human",
        ),
        ("scenario:SCENARIO-2025-002", None, "episode", 1.0, None, "bool", "human"),
        # a hook-logged user reply judges the latest earlier moderator turn
        (
            "scenario:SCENARIO-2025-001",
            "scenario:SCENARIO-2025-001#0",
            "turn",
            0.0,
            None,
            "bool",
            "human",
        ),
    ]


def test_satisfaction_correction_and_effectiveness_keep_their_scales_and_kinds(silver):
    assert [r[3:] for r in feedback_of(silver, "user_satisfaction_score")] == [
        (0.8, None, "[0,1]", "human"),
        (1.0, None, "[0,1]", "human"),
    ]
    assert [r[1] for r in feedback_of(silver, "user_satisfaction_score")] == [
        "scenario:SCENARIO-2025-001#0",
        "scenario:SCENARIO-2025-001#4",
    ]
    assert [r[3:] for r in feedback_of(silver, "correction_magnitude")] == [
        (None, "moderate", "category", "system")
    ]
    assert [r[3:] for r in feedback_of(silver, "moderator_effectiveness")] == [
        (None, "good", "category", "self")
    ]


def test_metadata_signals_become_episode_feedback(silver):
    assert [r[2:] for r in feedback_of(silver, "scenario_successful")] == [
        ("episode", 1.0, None, "bool", "outcome")
    ]
    assert [r[2:] for r in feedback_of(silver, "user_satisfaction_overall")] == [
        ("episode", 0.9, None, "[0,1]", "human")
    ]


def test_decisions_compare_the_users_choice_with_the_moderators_proposal(silver):
    rows = (
        silver["decisions"]
        .sort("ts", "episode_id")
        .select("turn_id", "action", "suggested_action", "suggestion_followed", "actor_type")
        .rows()
    )
    assert rows == [
        ("scenario:SCENARIO-2025-001#1", "proceed_without_reround", "re-round", False, "human"),
        ("scenario:SCENARIO-2025-002#2", "accept", None, None, "human"),
        ("scenario:SCENARIO-2025-001#3", "advance-phase", "Advance Phase", True, "human"),
    ]


def test_repeated_contexts_are_stored_once_and_referenced_by_hash(silver):
    assert silver["contexts"].height == 1
    hashes = silver["decisions"]["context_hash"].drop_nulls().unique().to_list()
    assert hashes == silver["contexts"]["context_hash"].to_list()


def test_ids_are_deterministic_across_runs(silver):
    again = to_silver(bronze(ENTRIES + A_COPY_ENTRIES, METADATA), Settings())
    for name, key in (
        ("feedback", "feedback_id"),
        ("decisions", "decision_id"),
        ("turns", "turn_id"),
    ):
        assert sorted(again[name].collect()[key].to_list()) == sorted(silver[name][key].to_list())


def test_a_repeated_checkpoint_revises_the_earlier_one_and_a_correction_names_what_it_corrects():
    f = "scenarios/completed/SCENARIO-2025-003/moderator_dialog.jsonl"
    rows = [
        entry(
            f,
            0,
            interaction_type="checkpoint",
            phase="phase_1",
            checkpoint_number=2,
            moderator_text="Round two.",
            user_text="Wrong.",
            provided_correction=True,
            decision_time_seconds=9.0,
        ),
        entry(
            f,
            1,
            interaction_type="clarification",
            phase="phase_1",
            moderator_text="Noted.",
            user_text="ok",
        ),
        entry(
            f,
            2,
            interaction_type="checkpoint",
            phase="phase_1",
            checkpoint_number=2,
            moderator_text="Round two, revised.",
            user_text="Good.",
        ),
        entry(
            f,
            3,
            interaction_type="checkpoint",
            phase="phase_2",
            checkpoint_number=2,
            moderator_text="Other phase.",
        ),
    ]
    out = to_silver(bronze(rows, []), Settings())
    turns = conform(out["turns"], silver_schema("turns")).collect().sort("turn_index")
    attrs = {
        r["turn_id"].split("#")[1]: json.loads(r["attributes"]) for r in turns.iter_rows(named=True)
    }
    e = "scenario:SCENARIO-2025-003"
    assert attrs["4"]["revises_turn_id"] == f"{e}#0"  # same phase, checkpoint and type
    assert (
        attrs["2"]["revises_turn_id"] is None and attrs["6"]["revises_turn_id"] is None
    )  # acknowledgement, other phase
    assert (attrs["1"]["source_correction"], attrs["1"]["corrects_turn_id"]) == (True, f"{e}#0")
    assert (attrs["1"]["response_seconds"], attrs["1"]["response_seconds_basis"]) == (
        9.0,
        "decision_time_seconds",
    )
    assert (attrs["3"]["response_seconds"], attrs["3"]["response_seconds_basis"]) == (
        None,
        "unknown",
    )


@pytest.mark.parametrize(
    ("proposal", "decision", "followed"),
    [
        ("proceed", "proceed_without_reround", True),
        ("re-round", "proceed_with_reround", True),
        ("re-round", "Re Round", True),
        ("Advance Phase", "proceed", True),
        ("re-round", "accept", True),
        ("proceed", "reject", False),
        ("re-round", "proceed_without_reround", False),
        ("consult_three", "consult_four", None),
        ("proceed", "think_about_it", None),
    ],
)
def test_followed_compares_decision_and_proposal_by_meaning(proposal, decision, followed):
    f = "scenarios/completed/SCENARIO-2025-004/moderator_dialog.jsonl"
    rows = [
        entry(
            f,
            0,
            moderator_text="Round one.",
            user_text="ok",
            proposed_action=proposal,
            user_decision=decision,
        )
    ]
    decisions = to_silver(bronze(rows, []), Settings())["decisions"].collect()
    assert decisions["suggestion_followed"].to_list() == [followed]


def test_context_hash_is_sha256_of_the_context_text(silver):
    contexts = silver["contexts"]
    assert contexts.height > 0
    for context_hash, text in contexts.select("context_hash", "context").iter_rows():
        assert context_hash == hashlib.sha256(text.encode()).hexdigest()


def _stable_id(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def test_feedback_and_decision_ids_are_hashes_of_the_compact_json_of_their_parts(silver):
    ids = dict(silver["feedback"].select("name", "feedback_id").iter_rows())
    entry = (
        '["feedback","scenario:SCENARIO-2025-001",0,"scenario:SCENARIO-2025-001#0",'
        '"correction_magnitude",null,"moderate"]'
    )
    assert ids["correction_magnitude"] == _stable_id(entry)
    metadata = '["feedback","scenario:SCENARIO-2025-001","scenario_successful",1.0]'
    assert ids["scenario_successful"] == _stable_id(metadata)
    decision = '["decision","scenario:SCENARIO-2025-002",1]'
    assert _stable_id(decision) in set(silver["decisions"]["decision_id"])
