"""Study bronze → silver on tiny hand-built bronze frames."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

import orjson
import polars as pl
import pytest

from pipelines.config.settings import Settings
from pipelines.schemas import conform, frame_from_rows, polars_schema, silver_schema
from pipelines.schemas.bronze.study import StudyParticipants, StudySessions
from pipelines.schemas.silver import SILVER_MODELS
from pipelines.transforms.study import AGREE_MIN_CONFIDENCE, MAX_RESIDENT_TURNS, to_silver

PID = "0f8e3a52-6c1d-4b7e-9a20-3d5b8c7e1f44"
T0 = datetime(2026, 1, 9, 7, 0, tzinfo=UTC)


def dialog(
    stances: list[tuple[str, float]], trailing_resident: bool = False
) -> tuple[list[dict], list[dict]]:
    history = [{"role": "operator", "text": "Hello, this is fire dispatch."}]
    iql = []
    for k, (stance, confidence) in enumerate(stances, start=1):
        history += [
            {"role": "resident", "text": f"reply {k}"},
            {"role": "operator", "text": f"response {k}"},
        ]
        iql.append(
            {
                "turn": k,
                "resident_message": f"reply {k}",
                "operator_response": f"response {k}",
                "selected_policy": "niki",
                "q_values": [{"policy": "niki", "value": 1.08}, {"policy": "bob", "value": 1.06}],
                "judge_stance": stance,
                "judge_confidence": confidence,
                "judge_reasoning": f"why {k}",
                "ts": T0 + timedelta(seconds=10 * k),
            }
        )
    if trailing_resident:
        history += [
            {"role": "resident", "text": "okay thanks"},
            {"role": "operator", "text": "Stay safe."},
        ]
    return history, iql


def session(
    session_id: str,
    stances: list[tuple[str, float]] | None = None,
    *,
    copy_kind: str = "session_file",
    file: str | None = None,
    participant_id: str | None = PID,
    trailing_resident: bool = False,
    locator: str = "file",
) -> dict:
    history, iql = dialog(stances or [], trailing_resident)
    return {
        "file": file or f"survey_responses/conversations/{session_id}.json",
        "locator": locator,
        "copy_kind": copy_kind,
        "session_id": session_id,
        "participant_id": participant_id,
        "participant_id_from": "record" if participant_id else None,
        "character": "niki",
        "conversation_type": "roleplay",
        "history": history,
        "iql": iql,
        "created_at": T0,
        "ended_at": T0 + timedelta(minutes=3),
    }


def run(sessions: list[dict], participants: list[dict] | None = None) -> dict[str, pl.DataFrame]:
    bronze = {
        "study_sessions": frame_from_rows(sessions, polars_schema(StudySessions)).lazy(),
        "study_participants": frame_from_rows(
            participants or [], polars_schema(StudyParticipants)
        ).lazy(),
    }
    out = to_silver(bronze, Settings())
    return {
        t: SILVER_MODELS[t].validate(conform(f, silver_schema(t)).collect(), lazy=True)
        for t, f in out.items()
    }


def end_reason(stances: list[tuple[str, float]], **kw) -> str:
    return run([session(f"{PID}_niki_1", stances, **kw)])["episodes"]["end_reason"][0]


def test_three_copies_of_a_session_become_one_episode_from_the_most_complete_copy() -> None:
    sid = f"{PID}_niki_1767943131"
    rows = [
        session(
            sid,
            [("UNKNOWN", 0.5)],
            copy_kind="master",
            file="survey_responses/conversations/all_conversations.jsonl",
        ),
        session(
            sid,
            [("UNKNOWN", 0.5), ("AGREE", 0.9)],
            copy_kind="completed",
            participant_id=None,
            file="survey_responses/completed/CCC001.json",
            locator="conversations[0]",
        ),
        session(
            sid,
            [("UNKNOWN", 0.5), ("AGREE", 0.9)],
            copy_kind="exit",
            participant_id=None,
            file="survey_responses/exits/INC001.json",
            locator="conversations[0]",
        ),
    ]
    silver = run(rows)
    episode = silver["episodes"].row(0, named=True)
    assert silver["episodes"].height == 1
    assert episode["episode_id"] == f"study:{sid}"
    assert (
        episode["source_file"] == "survey_responses/completed/CCC001.json"
    )  # longest; completed > exit
    assert episode["group_id"] == PID  # linked from the (shorter) master copy
    assert orjson.loads(episode["attributes"])["copies"] == 3
    assert silver["turns"].height == 5 and silver["decisions"].height == 2


def test_copy_with_participant_wins_a_tie_and_session_file_beats_master() -> None:
    sid = f"{PID}_bob_2"
    rows = [
        session(sid, [("NEUTRAL", 0.6)], copy_kind="master", participant_id=None, file="m.jsonl"),
        session(
            sid, [("NEUTRAL", 0.6)], copy_kind="exit", file="survey_responses/exits/INC002.json"
        ),
        session(sid, [("NEUTRAL", 0.6)], copy_kind="session_file", file="z.json"),
    ]
    assert run(rows)["episodes"]["source_file"][0] == "z.json"
    assert run(rows[:2])["episodes"]["source_file"][0] == "survey_responses/exits/INC002.json"


def test_group_falls_back_to_uuid_prefix_of_the_session_id() -> None:
    silver = run(
        [
            session(
                f"{PID}_nonrole_rational-informational_3", [("NEUTRAL", 0.6)], participant_id=None
            )
        ]
    )
    assert silver["episodes"]["group_id"][0] == PID
    assert silver["turns"].filter(pl.col("native_role") == "resident")["actor_id"].to_list() == [
        PID
    ]
    odd = run([session("pilot-7_niki_4", [("AGREE", 0.9)], participant_id=None)])
    assert odd["episodes"]["group_id"][0] == "pilot-7_niki_4"


def test_agreement_needs_confidence_at_threshold() -> None:
    assert end_reason([("NEUTRAL", 0.6), ("AGREE", AGREE_MIN_CONFIDENCE)]) == "agreement"
    assert end_reason([("AGREE", AGREE_MIN_CONFIDENCE - 0.01)]) == "unknown"


def test_refusal_needs_two_consecutive_refuse_steps() -> None:
    assert end_reason([("REFUSE", 0.9), ("REFUSE", 0.8)]) == "refusal"
    assert end_reason([("REFUSE", 0.9), ("DELAY", 0.7), ("REFUSE", 0.8)]) == "unknown"


def test_first_event_wins() -> None:
    assert end_reason([("AGREE", 0.9), ("REFUSE", 0.9), ("REFUSE", 0.9)]) == "agreement"
    assert end_reason([("REFUSE", 0.9), ("REFUSE", 0.9), ("AGREE", 0.9)]) == "refusal"


def test_fifteen_resident_turns_end_as_max_turns_unless_judged_first() -> None:
    calm = [("NEUTRAL", 0.6)] * (MAX_RESIDENT_TURNS - 1)
    assert end_reason(calm + [("DELAY", 0.6)]) == "max_turns"
    assert end_reason(calm + [("AGREE", 0.95)]) == "agreement"  # judged on the same step
    assert (
        end_reason(calm[:-1] + [("DELAY", 0.6)], trailing_resident=True) == "max_turns"
    )  # no IQL for turn 15
    assert end_reason(calm) == "unknown"


def test_iql_step_is_a_decision_on_its_operator_turn_and_stance_feedback_on_its_resident_turn() -> (
    None
):
    silver = run(
        [session(f"{PID}_niki_5", [("UNKNOWN", 0.5), ("AGREE", 0.9)], trailing_resident=True)]
    )
    eid = f"study:{PID}_niki_5"
    decisions = silver["decisions"].sort("ts")
    assert decisions["turn_id"].to_list() == [f"{eid}#2", f"{eid}#4"]
    assert decisions["action"].to_list() == ["niki", "niki"]
    assert decisions["candidates"][0].to_list() == [
        {"action": "niki", "value": 1.08},
        {"action": "bob", "value": 1.06},
    ]
    assert decisions["actor_type"].unique().to_list() == ["policy"]
    assert all(orjson.loads(a)["response_matches_turn"] for a in decisions["attributes"])
    judged = silver["feedback"].filter(pl.col("name") == "judge_stance").sort("observed_at")
    assert judged["turn_id"].to_list() == [f"{eid}#1", f"{eid}#3"]
    assert judged["value_text"].to_list() == ["UNKNOWN", "AGREE"]
    assert judged["value_num"].to_list() == [0.5, 0.9]
    assert set(judged["source_kind"]) == {"judge"} and set(judged["scale"]) == {"category"}
    assert orjson.loads(judged["attributes"][0])["reasoning"] == "why 1"
    assert judged["decision_id"].to_list() == decisions["decision_id"].to_list()


def test_turn_roles_actors_and_indexes() -> None:
    turns = run([session(f"{PID}_niki_6", [("NEUTRAL", 0.6)])])["turns"].sort("turn_index")
    assert turns["turn_index"].to_list() == [0, 1, 2]
    assert turns["role"].to_list() == ["assistant", "user", "assistant"]
    assert turns["native_role"].to_list() == ["operator", "resident", "operator"]
    assert turns["actor_id"].to_list() == ["operator", PID, "operator"]
    assert turns["ts"].to_list() == [None, None, T0 + timedelta(seconds=10)]


def test_stance_for_a_resident_message_missing_from_history_is_quarantined_as_orphan() -> None:
    row = session(f"{PID}_niki_7", [("NEUTRAL", 0.6), ("AGREE", 0.9)])
    row["history"] = row["history"][:3]  # transcript lost its last exchange
    silver = run([row])
    assert silver["quarantine"]["error_kind"].to_list() == ["orphan"]
    assert silver["quarantine"]["stage"].to_list() == ["silver"]
    assert silver["feedback"].height == 1
    assert silver["decisions"].sort("ts")["turn_id"].to_list() == [f"study:{PID}_niki_7#2", None]


def participant(post_surveys: list[dict]) -> dict:
    survey = {"background": {"email": "someone@example.org", "nickname": "Mavis"}}
    return {
        "file": "survey_responses/completed/CCC001.json",
        "locator": "participant",
        "confirmation_number": "CCC001",
        "participant_id": PID,
        "n_conversations": 1,
        "survey": orjson.dumps(survey).decode(),
        "post_surveys": orjson.dumps(post_surveys).decode(),
    }


def test_post_survey_willing_is_episode_feedback_and_unknown_session_is_orphan() -> None:
    sid = f"{PID}_niki_8"
    answers = [
        {
            "sessionId": sid,
            "willing": "no",
            "timestamp": "2026-01-09T07:20:03.396Z",
            "conversationNumber": "1",
        },
        {"sessionId": f"{PID}_bob_404", "willing": "yes", "timestamp": "2026-01-09T07:21:03Z"},
    ]
    silver = run([session(sid, [("NEUTRAL", 0.6)])], [participant(answers)])
    willing = silver["feedback"].filter(pl.col("name") == "willing").row(0, named=True)
    assert (
        willing["target"],
        willing["value_num"],
        willing["value_text"],
        willing["source_kind"],
    ) == ("episode", 0.0, "no", "human")
    assert willing["observed_at"] == datetime(2026, 1, 9, 7, 20, 3, 396000, tzinfo=UTC)
    assert silver["quarantine"].select("locator", "error_kind").rows() == [
        ("post_surveys[1]", "orphan")
    ]


def test_survey_pii_never_reaches_silver() -> None:
    sid = f"{PID}_niki_9"
    silver = run(
        [session(sid, [("NEUTRAL", 0.6)])], [participant([{"sessionId": sid, "willing": "yes"}])]
    )
    for frame in silver.values():
        text = frame.write_json()
        assert "example.org" not in text and "Mavis" not in text


def test_ids_are_deterministic_across_runs() -> None:
    sid = f"{PID}_niki_10"
    rows = [
        session(sid, [("NEUTRAL", 0.6), ("REFUSE", 0.8)]),
        session(sid, [("NEUTRAL", 0.6), ("REFUSE", 0.8)], copy_kind="master", file="m.jsonl"),
    ]
    first, second = run(rows), run(list(reversed(rows)))
    assert first["episodes"].equals(second["episodes"])
    for table, key in (
        ("decisions", "decision_id"),
        ("feedback", "feedback_id"),
        ("turns", "turn_id"),
    ):
        assert sorted(first[table][key]) == sorted(second[table][key])


@pytest.mark.parametrize("table", ["episodes", "turns", "feedback", "decisions", "quarantine"])
def test_empty_bronze_gives_empty_valid_silver(table: str) -> None:
    assert run([])[table].height == 0


def test_copies_naming_different_participants_are_a_duplicate_conflict() -> None:
    sid = f"{PID}_niki_11"
    other = "11111111-2222-4333-8444-555555555555"
    rows = [
        session(sid, [("NEUTRAL", 0.6)]),
        session(sid, [("NEUTRAL", 0.6)], copy_kind="master", file="m.jsonl", participant_id=other),
        session(sid, [("NEUTRAL", 0.6)], copy_kind="completed", file="c.json", participant_id=None),
    ]
    quarantine = run(rows)["quarantine"]
    assert quarantine.select("file", "error_kind").rows() == [("m.jsonl", "duplicate_conflict")]
    assert "participant_id" in quarantine["message"][0]
    assert "kept that copy because its kind ranks first" in quarantine["message"][0]


def test_a_longer_copy_that_rewrites_an_earlier_turn_is_a_conflict_not_a_snapshot() -> None:
    sid = f"{PID}_bob_12"
    longer = session(sid, [("NEUTRAL", 0.6), ("AGREE", 0.9)], copy_kind="master", file="m.jsonl")
    shorter = session(sid, [("NEUTRAL", 0.6)])
    shorter["history"][1] = {"role": "resident", "text": "something else"}
    quarantine = run([longer, shorter])["quarantine"]
    assert quarantine.select("file", "error_kind").rows() == [
        (shorter["file"], "duplicate_conflict")
    ]
    assert "history[1] (text)" in quarantine["message"][0]
    assert "more history entries (5 vs 3)" in quarantine["message"][0]


@pytest.mark.parametrize(
    ("n", "field", "value"),
    [
        (13, "participant_id", "11111111-2222-4333-8444-555555555555"),
        (14, "character", "bob"),
    ],
)
def test_an_earlier_snapshot_differing_in_a_fixed_field_is_a_conflict(n, field, value) -> None:
    """Otherwise a plain earlier save of the session: another participant or character is not."""
    sid = f"{PID}_bob_{n}"
    longer = session(sid, [("NEUTRAL", 0.6), ("AGREE", 0.9)])
    shorter = session(sid, [("NEUTRAL", 0.6)], copy_kind="master", file="m.jsonl")
    shorter[field] = value
    quarantine = run([longer, shorter])["quarantine"]
    assert quarantine.select("file", "error_kind").rows() == [("m.jsonl", "duplicate_conflict")]
    assert field in quarantine["message"][0]


def test_an_earlier_snapshot_with_other_counters_is_not_a_conflict() -> None:
    sid = f"{PID}_bob_15"
    longer = session(sid, [("NEUTRAL", 0.6), ("AGREE", 0.9)])
    shorter = session(sid, [("NEUTRAL", 0.6)], copy_kind="master", file="m.jsonl")
    shorter["ended_at"] = T0 + timedelta(minutes=1)
    shorter["turn_count"] = 1
    assert run([longer, shorter])["quarantine"].height == 0


def test_decision_id_is_the_hash_of_the_compact_json_of_session_and_step() -> None:
    sid = 'odd "id" \\ with\ttab'
    decisions = run([session(sid, [("NEUTRAL", 0.6)])])["decisions"]
    text = '["study-iql-step","odd \\"id\\" \\\\ with\\ttab",1]'  # orjson's escapes, by hand
    assert decisions["decision_id"].to_list() == [hashlib.sha256(text.encode()).hexdigest()[:20]]


@pytest.mark.parametrize(
    ("ts", "written"),
    [
        (T0 + timedelta(seconds=10), "2026-01-09T07:00:10+00:00"),
        (T0 + timedelta(microseconds=5), "2026-01-09T07:00:00.000005+00:00"),
    ],
)
def test_judge_feedback_id_is_the_hash_of_the_compact_json_of_its_stance(ts, written) -> None:
    sid = f"{PID}_niki_16"
    row = session(sid, [("NEUTRAL", 0.57)])
    row["iql"][0]["ts"] = ts
    feedback = run([row])["feedback"].filter(pl.col("name") == "judge_stance")
    text = f'["judge_stance","study:{sid}#1","NEUTRAL",0.57,"{written}"]'
    assert feedback["feedback_id"].to_list() == [hashlib.sha256(text.encode()).hexdigest()[:20]]


def test_resident_positions_number_each_episodes_resident_messages_in_its_history_order() -> None:
    from pipelines.transforms.study.sessions import resident_positions

    def entries(*roles: str) -> list[dict]:
        return [{"role": r, "text": f"{r} {i}", "extra": None} for i, r in enumerate(roles)]

    # Episodes out of id order, one with two resident messages in a row and a last one unanswered.
    chosen = pl.LazyFrame(
        {
            "episode_id": ["study:b", "study:a"],
            "history": [
                entries("operator", "resident", "resident", "operator", "resident"),
                entries("operator", "resident", "operator"),
            ],
        },
        schema={
            "episode_id": pl.String,
            "history": polars_schema(StudySessions)["history"],
        },
    )
    got = resident_positions(chosen).collect().sort("episode_id", "turn").rows()
    assert got == [
        ("study:a", 1, 1, "resident 1", 2, "operator 2"),
        ("study:b", 1, 1, "resident 1", None, None),
        ("study:b", 2, 2, "resident 2", 3, "operator 3"),
        ("study:b", 3, 4, "resident 4", None, None),
    ]
