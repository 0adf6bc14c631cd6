"""Conformance: the study's rules (source document "IQL Data Explanation", "When Conversations Are
Saved"; DESIGN §3 "credit goes to the action that caused it") on tiny hand-written raw sessions.

How a session reads (operator speaks first, the document's example): history[0] is the scripted
opening; IQL step k holds resident message k = history[2k-1], the judge's stance on it, and the
reply it chose = history[2k]. Resident message k answers the reply of step k-1, so the stance at
step k — and a terminal ±1 it triggers — rewards step k-1. Expected values below are worked out
by hand from that; the code under test is never asked for them.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest

from tests.conformance.harness import Built, run_pipeline, write_json, write_jsonl
from tests.conftest import REAL_SAMPLES

PID = "0f8e3a52-6c1d-4b7e-9a20-3d5b8c7e1f44"
CONVERSATIONS = "survey_responses/conversations"
OPENING = "Hello, this is the fire department dispatcher. Are you safe at home?"
RESIDENT = {
    "AGREE": "Alright, we will head to the shelter now.",
    "REFUSE": "No, I am staying here with my horses.",
    "NEUTRAL": "How close is the fire exactly?",
    "UNKNOWN": "I am doing good.",
    "DELAY": "Let me finish packing first.",
}
POLICIES = (
    "provide_information",
    "express_urgency",
    "give_direction",
    "offer_assistance",
    "ask_question",
)


def reply(k: int) -> str:
    # no digits: nothing for the release redactor to touch
    return f"Dispatcher reply for step {'I' * k}."


def session(
    name: str,
    stances: list[tuple[str, float]],
    *,
    closing: bool = False,
    policies: tuple[str, ...] = POLICIES,
) -> dict:
    """A roleplay session: opening, then per step k resident message k and the reply step k chose.
    `closing`: the resident answers the last reply and gets a goodbye that no IQL step recorded
    (iql_data one entry shorter than the resident turns, as in the real CCC001)."""
    history = [{"role": "operator", "text": OPENING}]
    iql = []
    for k, (stance, confidence) in enumerate(stances, start=1):
        resident = f"{RESIDENT[stance]} ({'I' * k})"
        history += [{"role": "resident", "text": resident}, {"role": "operator", "text": reply(k)}]
        policy = policies[(k - 1) % len(policies)]
        iql.append(
            {
                "turn": k,
                "resident_message": resident,
                "operator_response": reply(k),
                "selected_policy": policy,
                "q_values": {p: (0.9 if p == policy else 0.5) for p in POLICIES},
                "judge": {
                    "stance": stance,
                    "confidence": confidence,
                    "reasoning": f"judged step {k}",
                },
                "timestamp": f"2026-01-09T07:19:{10 + k:02d}",
            }
        )
    if closing:
        history += [
            {"role": "resident", "text": "okay thanks"},
            {"role": "operator", "text": "Stay safe, goodbye."},
        ]
    return {
        "session_id": f"{PID}_{name}",
        "participant_id": PID,
        "character": "niki",
        "conversation_type": "roleplay",
        "persuasion_strategy": None,
        "turn_count": sum(h["role"] == "resident" for h in history),
        "history": history,
        "iql_data": iql,
        "created_at": "2026-01-09T07:19:00",
        "ended_at": "2026-01-09T07:21:00",
        "scenario": "You are at home with your partner when the phone rings.",
    }


def build(tmp_path: Path, *sessions: dict) -> Built:
    raw = tmp_path / "raw"
    for record in sessions:
        write_json(raw / CONVERSATIONS / f"{record['session_id']}.json", record)
    return run_pipeline(raw, tmp_path / "data")


def eid(record: dict) -> str:
    return f"study:{record['session_id']}"


def terminal_row(built: Built, record: dict) -> dict:
    rows = built.gold["turn_rewards"].filter(
        pl.col("reward_rule").str.starts_with("study_terminal@")
        & (pl.col("episode_id") == eid(record))
    )
    assert rows.height == 1
    return rows.row(0, named=True)


def step_of(built: Built) -> dict[str, int]:
    """decision_id → IQL step, read from the raw step number silver carries."""
    d = built.silver["decisions"]
    return dict(
        zip(
            d["decision_id"],
            d["attributes"].str.json_path_match("$.step").cast(pl.Int64),
            strict=True,
        )
    )


def rl_episode(built: Built, record: dict) -> pl.DataFrame:
    """The released rl_steps of one session (ids are pseudonymized there: matched by
    decision_id)."""
    ours = built.silver["decisions"].filter(pl.col("episode_id") == eid(record))["decision_id"]
    steps = built.datasets.get(
        "rl_steps", pl.DataFrame({"decision_id": []}, schema={"decision_id": pl.String})
    )
    rows = steps.filter(pl.col("decision_id").is_in(ours.implode()))
    if rows.height:
        assert rows["episode_id"].n_unique() == 1
    return rows.sort("step") if rows.height else rows


def stance_rewards(built: Built, record: dict) -> dict[int, float]:
    rows = built.gold["turn_rewards"].filter(
        pl.col("reward_rule").str.starts_with("study_stance_step@")
        & (pl.col("episode_id") == eid(record))
    )
    steps = step_of(built)
    return {steps[d]: r for d, r in zip(rows["decision_id"], rows["reward"], strict=True)}


# ---------------------------------------------------------------- credit: terminal rewards


def test_agreement_at_step_k_is_credited_to_the_action_of_step_k_minus_1_not_the_reply_after_it(
    tmp_path,
):
    # Steps: 1 NEUTRAL, 2 UNKNOWN, 3 AGREE 0.9 (≥ 0.70: agreement), then "okay thanks" + goodbye, no
    # IQL entry. Resident message 3 = history[5] answers history[4], the reply step 2 chose
    # (express_urgency).
    record = session("niki_1", [("NEUTRAL", 0.6), ("UNKNOWN", 0.5), ("AGREE", 0.9)], closing=True)
    built = build(tmp_path, record)
    steps = rl_episode(built, record)
    # The RL episode is steps 1-2; step 3's reply was written after the agreement.
    assert steps["action"].to_list() == ["provide_information", "express_urgency"]
    term = terminal_row(built, record)
    assert term["reward"] == 1.0
    assert term["turn_id"] == f"{eid(record)}#4"
    assert step_of(built)[term["decision_id"]] == 2
    episode = built.silver["episodes"].row(0, named=True)
    assert (
        episode["end_reason"] == "agreement" and json.loads(episode["attributes"])["end_step"] == 3
    )
    assert steps["is_first"].to_list() == [True, False] and steps["is_last"].to_list() == [
        False,
        True,
    ]
    assert steps["is_terminal"].to_list() == [False, True]
    assert steps["discount"].to_list() == [1.0, 0.0]
    # stance values NEUTRAL 0, UNKNOWN 0, AGREE 1; scale 0.5:
    #   step 1: 0.5 × (0 − 0) = 0;  step 2: 0.5 × (1 − 0) = 0.5, plus the terminal +1 = 1.5
    assert steps["reward"].to_list() == [0.0, 1.5]


def test_refusal_two_consecutive_refuse_is_minus_one_for_the_action_before_the_second_refuse(
    tmp_path,
):
    # Steps: 1 NEUTRAL, 2 REFUSE, 3 REFUSE → refusal judged at step 3, answering step 2's reply
    # (history[4]).
    record = session("bob_2", [("NEUTRAL", 0.6), ("REFUSE", 0.8), ("REFUSE", 0.9)])
    built = build(tmp_path, record)
    assert built.silver["episodes"]["end_reason"].to_list() == ["refusal"]
    term = terminal_row(built, record)
    assert (term["reward"], term["turn_id"]) == (-1.0, f"{eid(record)}#4")
    steps = rl_episode(built, record)
    assert steps["action"].to_list() == ["provide_information", "express_urgency"]
    assert steps["is_terminal"].to_list() == [False, True]
    # step 1: 0.5 × (−1 − 0) = −0.5; step 2: 0.5 × (−1 − (−1)) = 0, plus the terminal −1
    assert steps["reward"].to_list() == [-0.5, -1.0]


def test_refuse_at_steps_one_and_three_without_a_step_two_is_not_two_consecutive_refusals(tmp_path):
    record = session(
        "bob_3", [("REFUSE", 0.8), ("NEUTRAL", 0.6), ("REFUSE", 0.9), ("NEUTRAL", 0.6)]
    )
    del record["iql_data"][1]  # the IQL log has turns 1, 3, 4: REFUSE at 1 and 3 are not in a row
    built = build(tmp_path, record)
    assert built.silver["episodes"]["end_reason"].to_list() == ["unknown"]
    assert (
        built.gold["turn_rewards"]
        .filter(pl.col("reward_rule").str.starts_with("study_terminal@"))
        .height
        == 0
    )


def test_max_turns_fifteenth_resident_message_ends_at_step_fourteen_truncated_with_reward_zero(
    tmp_path,
):
    stances = [("NEUTRAL", 0.6), ("DELAY", 0.7)] * 7 + [
        ("NEUTRAL", 0.6)
    ]  # 15 steps, no AGREE, no REFUSE
    record = session("mary_4", stances)
    built = build(tmp_path, record)
    steps = rl_episode(built, record)
    assert (
        steps.height == 14
    )  # step 15's reply was written after the 15th resident message ended it
    term = terminal_row(built, record)
    assert (term["reward"], term["turn_id"]) == (
        0.0,
        f"{eid(record)}#28",
    )  # reply of step 14 = history[28]
    episode = built.silver["episodes"].row(0, named=True)
    assert (
        episode["end_reason"] == "max_turns" and json.loads(episode["attributes"])["end_step"] == 15
    )
    assert steps["is_last"].to_list() == [False] * 13 + [True]
    assert not steps["is_terminal"].any()  # max turns truncates: not a terminal state
    assert steps["discount"].to_list() == [1.0] * 14


def test_agreement_on_the_first_resident_message_is_credited_to_the_scripted_opening_not_an_rl_step(
    tmp_path,
):
    # Resident message 1 answers history[0], the opening, which no IQL step chose.
    record = session("ben_5", [("AGREE", 0.95)], closing=True)
    built = build(tmp_path, record)
    assert rl_episode(built, record).height == 0  # no action of the policy led to it
    term = terminal_row(built, record)
    assert (term["reward"], term["decision_id"], term["turn_id"]) == (1.0, None, None)
    assert json.loads(term["rule_inputs"])["credited_step"] == 0


def test_stance_step_credits_step_k_minus_1_and_stops_at_the_judged_stance_that_ended_the_session(
    tmp_path,
):
    # Steps: 1 REFUSE, 2 NEUTRAL, 3 AGREE 0.9 (agreement), 4 NEUTRAL (the conversation went on).
    record = session("tom_6", [("REFUSE", 0.8), ("NEUTRAL", 0.6), ("AGREE", 0.9), ("NEUTRAL", 0.6)])
    built = build(tmp_path, record)
    # step 1: 0.5 × (0 − (−1)) = 0.5; step 2: 0.5 × (1 − 0) = 0.5; step 3 → 4 is after the ending:
    # none
    assert stance_rewards(built, record) == {1: 0.5, 2: 0.5}
    steps = rl_episode(built, record)
    assert steps["reward"].to_list() == [0.5, 1.5] and steps["is_terminal"].to_list() == [
        False,
        True,
    ]


def test_each_step_is_tied_to_the_kth_resident_message_even_when_the_resident_speaks_first(
    tmp_path,
):
    record = session("ana_7", [("NEUTRAL", 0.6), ("AGREE", 0.9)])
    record["history"] = record["history"][1:]  # no opening: resident message k is history[2k-2]
    built = build(tmp_path, record)
    judged = (
        built.silver["feedback"]
        .filter(pl.col("name") == "judge_stance")
        .sort("value_text", descending=True)
    )
    assert judged["turn_id"].to_list() == [f"{eid(record)}#0", f"{eid(record)}#2"]  # NEUTRAL, AGREE
    decisions = built.silver["decisions"].sort("turn_id")
    assert decisions["turn_id"].to_list() == [f"{eid(record)}#1", f"{eid(record)}#3"]
    assert built.silver["quarantine"].height == 0


def test_real_ccc001_agreement_at_step_two_rewards_step_one(tmp_path):
    real = REAL_SAMPLES / "wildfire_persuasion" / "survey_responses" / "completed" / "CCC001.json"
    if not real.is_file():
        pytest.skip(f"real samples not present at {real}")
    folder = tmp_path / "raw" / "survey_responses" / "completed"
    folder.mkdir(parents=True)
    shutil.copy(real, folder)
    built = run_pipeline(tmp_path / "raw", tmp_path / "data")
    # niki: history 7 entries, 2 IQL steps: 1 UNKNOWN 0.5, 2 AGREE 1.0; resident message 3 "okay
    # thanks" has no step.
    record = {"session_id": "d1f53e2f-24f5-4d18-800d-a8e8ac002a60_niki_1767943131"}
    term = terminal_row(built, record)
    assert (term["reward"], term["turn_id"]) == (1.0, f"{eid(record)}#2")
    steps = rl_episode(built, record)
    assert steps.height == 1 and steps["is_terminal"].to_list() == [True]
    assert steps["reward"].to_list() == [1.5]  # 0.5 × (1 − 0) + 1


# ---------------------------------------------------------------- copies and IQL text checks


def test_session_copies_that_disagree_are_a_duplicate_conflict_and_the_most_complete_copy_is_kept(
    tmp_path,
):
    record = session("niki_8", [("NEUTRAL", 0.6), ("AGREE", 0.9)])
    edited = json.loads(json.dumps(record))
    edited["history"][1]["text"] = (
        "Who is this?"  # the master line says something else at history[1]
    )
    raw = tmp_path / "raw"
    write_json(raw / CONVERSATIONS / f"{record['session_id']}.json", record)
    write_jsonl(raw / CONVERSATIONS / "all_conversations.jsonl", [edited])
    participant = {
        "participant_id": PID,
        "confirmation_number": "CCC001",
        "status": "complete",
        "conversations": [{k: v for k, v in record.items() if k != "participant_id"}],
    }
    write_json(
        raw / "survey_responses" / "completed" / "CCC001.json", participant
    )  # identical: no conflict
    built = run_pipeline(raw, tmp_path / "data")
    conflicts = built.silver["quarantine"].filter(pl.col("error_kind") == "duplicate_conflict")
    assert conflicts.select("source", "file", "stage").rows() == [
        ("study", f"{CONVERSATIONS}/all_conversations.jsonl", "silver")
    ]
    message = conflicts["message"][0]
    assert f"{CONVERSATIONS}/{record['session_id']}.json" in message  # names the kept copy
    assert "history[1] (text)" in message  # and what differs
    assert "3 copies" in message
    # Same length, same steps, both name the participant: the session's own file beats the master
    # line.
    assert built.silver["episodes"]["source_file"].to_list() == [
        f"{CONVERSATIONS}/{record['session_id']}.json"
    ]
    assert built.silver["turns"].filter(pl.col("turn_index") == 1)["text"].to_list() == [
        record["history"][1]["text"]
    ]


def test_an_earlier_snapshot_of_a_session_is_not_a_conflict(tmp_path):
    record = session("bob_9", [("NEUTRAL", 0.6), ("DELAY", 0.7), ("AGREE", 0.9)])
    snapshot = json.loads(json.dumps(record))
    snapshot["history"], snapshot["iql_data"], snapshot["turn_count"] = (
        record["history"][:5],
        record["iql_data"][:2],
        2,
    )
    raw = tmp_path / "raw"
    write_json(raw / CONVERSATIONS / f"{record['session_id']}.json", record)
    write_jsonl(raw / CONVERSATIONS / "all_conversations.jsonl", [snapshot])
    built = run_pipeline(raw, tmp_path / "data", release=False)
    assert built.silver["quarantine"].height == 0
    assert built.silver["episodes"]["n_turns"].to_list() == [7]


def test_iql_step_whose_resident_message_does_not_match_its_turn_is_quarantined_and_not_rewarded(
    tmp_path,
):
    # Step 2's log says the resident refused, but history[3] (resident message 2) agrees to leave:
    # its REFUSE must not label history[3], nor make steps 2-3 "two consecutive REFUSE".
    record = session("mia_10", [("NEUTRAL", 0.6), ("REFUSE", 0.8), ("REFUSE", 0.9)])
    record["history"][3]["text"] = "Fine, I am packing the car."
    built = build(tmp_path, record)
    bad = built.silver["quarantine"]
    assert bad.select("error_kind", "stage", "locator").rows() == [
        ("bad_value", "silver", "file iql_data turn 2")
    ]
    assert "history[3]" in bad["message"][0] and "resident_message" in bad["message"][0]
    assert sorted(step_of(built).values()) == [1, 3]  # no decision for step 2
    judged = built.silver["feedback"].filter(pl.col("name") == "judge_stance")
    assert sorted(judged["turn_id"]) == [f"{eid(record)}#1", f"{eid(record)}#5"]
    assert built.silver["episodes"]["end_reason"].to_list() == [
        "unknown"
    ]  # 1 NEUTRAL, 3 REFUSE: no event
    assert built.gold["turn_rewards"].height == 0  # no consecutive judged pair, no ending
    steps = rl_episode(built, record)
    assert steps["action"].to_list() == ["provide_information"]  # cut where step 2 is missing
    assert not steps["is_terminal"].any()


def test_iql_step_whose_operator_response_is_not_the_next_reply_is_quarantined(tmp_path):
    record = session("ross_11", [("NEUTRAL", 0.6), ("AGREE", 0.9)])
    record["iql_data"][0]["operator_response"] = "A reply that was never sent."
    built = build(tmp_path, record)
    bad = built.silver["quarantine"]
    assert bad.select("error_kind", "locator").rows() == [("bad_value", "file iql_data turn 1")]
    assert "operator_response" in bad["message"][0] and "history[2]" in bad["message"][0]
    # Step 2's AGREE still ends the session, credited to step 1, whose decision is not trusted:
    # the episode keeps its terminal reward, but no decision and no RL step carries it.
    term = terminal_row(built, record)
    assert (term["reward"], term["decision_id"], term["turn_id"]) == (1.0, None, None)
    assert rl_episode(built, record).height == 0


def test_source_document_example_agreement_at_turn_two_credits_provide_information_of_turn_one(
    tmp_path,
):
    # The document's role-play example, its history completed with the turn-2 texts its iql_data
    # quotes.
    opening = "Hello, this is the fire department dispatcher..."
    t1 = (
        "Hi, yes I can hear you. What's happening?",
        "There's a wildfire approaching your area. Can you evacuate?",
    )
    t2 = (
        "I can leave but I need to know which direction is safe",
        "Head west on Main Street. That route is clear.",
    )
    q1 = {
        "provide_information": 0.85,
        "offer_assistance": 0.72,
        "express_urgency": 0.65,
        "ask_question": 0.58,
        "give_direction": 0.45,
    }
    q2 = {
        "give_direction": 0.92,
        "provide_information": 0.78,
        "offer_assistance": 0.65,
        "express_urgency": 0.55,
        "ask_question": 0.42,
    }
    record = {
        "session_id": "participant-id_niki_1234567890",
        "participant_id": PID,
        "character": "niki",
        "conversation_type": "roleplay",
        "persuasion_strategy": None,
        "turn_count": 2,
        "history": [{"role": "operator", "text": opening}]
        + [
            {"role": r, "text": t}
            for pair in (t1, t2)
            for r, t in zip(("resident", "operator"), pair, strict=True)
        ],
        "iql_data": [
            {
                "turn": 1,
                "resident_message": t1[0],
                "operator_response": t1[1],
                "selected_policy": "provide_information",
                "q_values": q1,
                "judge": {
                    "stance": "NEUTRAL",
                    "confidence": 0.65,
                    "reasoning": "Resident is seeking information...",
                },
                "timestamp": "2025-12-24T00:32:50.123456",
            },
            {
                "turn": 2,
                "resident_message": t2[0],
                "operator_response": t2[1],
                "selected_policy": "give_direction",
                "q_values": q2,
                "judge": {
                    "stance": "AGREE",
                    "confidence": 0.80,
                    "reasoning": "Resident is willing to evacuate...",
                },
                "timestamp": "2025-12-24T00:33:15.234567",
            },
        ],
        "created_at": "2025-12-24T00:32:45.123456",
        "ended_at": "2025-12-24T00:35:30.456789",
        "scenario": "It is a regular day at home. You (Niki) are with your elderly parents...",
    }
    built = build(tmp_path, record)
    # history: [0] opening, [1] t1 resident, [2] t1 reply, [3] t2 resident (AGREE 0.80 ≥ 0.70), [4]
    # t2 reply.
    steps = rl_episode(built, record)
    assert steps["action"].to_list() == [
        "provide_information"
    ]  # "Head west" was said after the agreement
    assert steps["is_terminal"].to_list() == [True]
    assert steps["reward"].to_list() == [1.5]  # 0.5 × (1 − 0) + 1
    term = terminal_row(built, record)
    assert (term["reward"], term["turn_id"]) == (1.0, f"{eid(record)}#2")
    judged = built.silver["feedback"].filter(pl.col("name") == "judge_stance").sort("turn_id")
    assert judged.select("turn_id", "value_text").rows() == [
        (f"{eid(record)}#1", "NEUTRAL"),
        (f"{eid(record)}#3", "AGREE"),
    ]
