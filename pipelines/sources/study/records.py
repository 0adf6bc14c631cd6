"""One raw study record (session or participant file) → one bronze row, or a RecordError."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from pipelines.sources.base import RecordError, dumps
from pipelines.sources.values import (
    as_float,
    as_int,
    expect_type,
    first_of,
    parse_ts,
    require,
    unknown_fields,
)

SESSION_FIELDS = frozenset(
    {
        "session_id",
        "participant_id",
        "participantId",
        "character",
        "conversation_type",
        "persuasion_strategy",
        "turn_count",
        "history",
        "iql_data",
        "created_at",
        "ended_at",
        "scenario",
    }
)
HISTORY_FIELDS = frozenset({"role", "text"})
HISTORY_ROLES = frozenset({"operator", "resident"})
STEP_FIELDS = frozenset(
    {
        "turn",
        "resident_message",
        "operator_response",
        "selected_policy",
        "q_values",
        "judge",
        "timestamp",
    }
)
JUDGE_FIELDS = frozenset({"stance", "confidence", "reasoning", "reason"})
PARTICIPANT_FIELDS = frozenset(
    {
        "confirmation_number",
        "participant_id",
        "participantId",
        "status",
        "completion_timestamp",
        "exit_timestamp",
        "exit_page",
        "survey",
        "post_surveys",
        "conversations",
    }
)


def optional_str(record: dict, name: str) -> str | None:
    value = record.get(name)
    if value is None:
        return None
    return expect_type(value, str, name)


def timestamp(value: Any, tz: str, what: str) -> Any:
    try:
        return parse_ts(value, tz)
    except RecordError as err:
        raise RecordError(err.kind, f"{what}: {err.message}") from None


def extra_json(record: dict, known: frozenset[str]) -> str | None:
    extra = unknown_fields(record, known)
    return None if extra is None else dumps(extra)


# ---------------------------------------------------------------- sessions


def session_row(record: Any, tz: str, enclosing_participant: str | None = None) -> dict:
    record = expect_type(record, dict, "session record")
    session_id = expect_type(require(record, "session_id"), str, "session_id")
    if not session_id.strip():
        raise RecordError("bad_value", "session_id is empty")
    participant_id, origin = _participant_of(record, enclosing_participant)
    history = expect_type(record.get("history") or [], list, "history")
    iql = expect_type(record.get("iql_data") or [], list, "iql_data")
    return {
        "session_id": session_id,
        "participant_id": participant_id,
        "participant_id_from": origin,
        "character": optional_str(record, "character"),
        "conversation_type": optional_str(record, "conversation_type"),
        "persuasion_strategy": optional_str(record, "persuasion_strategy"),
        "turn_count": as_int(record.get("turn_count"), "turn_count"),
        "history": [_history_entry(entry, i) for i, entry in enumerate(history)],
        "iql": _iql_steps(iql, tz),
        "created_at": timestamp(record.get("created_at"), tz, "created_at"),
        "ended_at": timestamp(record.get("ended_at"), tz, "ended_at"),
        "scenario": optional_str(record, "scenario"),
        "extra": extra_json(record, SESSION_FIELDS),
    }


def _participant_of(record: dict, enclosing: str | None) -> tuple[str | None, str | None]:
    for name, origin in (("participant_id", "record"), ("participantId", "participantId")):
        value = record.get(name)
        if value is not None and value != "":
            return expect_type(value, str, name), origin
    if enclosing:
        return enclosing, "enclosing_file"
    return None, None


def _history_entry(entry: Any, index: int) -> dict:
    entry = expect_type(entry, dict, f"history[{index}]")
    role = expect_type(require(entry, "role"), str, f"history[{index}].role")
    if role not in HISTORY_ROLES:
        raise RecordError(
            "bad_value", f"history[{index}].role is {role!r}, expected operator or resident"
        )
    text = entry.get("text")
    if text is not None:
        expect_type(text, str, f"history[{index}].text")
    return {"role": role, "text": text, "extra": extra_json(entry, HISTORY_FIELDS)}


def _iql_steps(steps: list, tz: str) -> list[dict]:
    rows = [_iql_step(step, i, tz) for i, step in enumerate(steps)]
    turns = [row["turn"] for row in rows]
    if len(set(turns)) != len(turns):
        raise RecordError("bad_value", f"iql_data repeats a turn number: {turns}")
    return rows


def _iql_step(step: Any, index: int, tz: str) -> dict:
    where = f"iql_data[{index}]"
    step = expect_type(step, dict, where)
    turn = as_int(require(step, "turn"), f"{where}.turn")
    if turn is None:  # "" counts as absent
        raise RecordError("missing_field", f"missing field {where}.turn")
    if turn < 1:
        raise RecordError("bad_value", f"{where}.turn is {turn}, turns count from 1")
    judge = expect_type(step.get("judge") or {}, dict, f"{where}.judge")
    stance = judge.get("stance")
    if stance is not None:
        stance = expect_type(stance, str, f"{where}.judge.stance").upper()
    extra = unknown_fields(step, STEP_FIELDS) or {}
    judge_extra = unknown_fields(judge, JUDGE_FIELDS)
    if judge_extra:
        extra["judge"] = judge_extra
    return {
        "turn": turn,
        "resident_message": optional_str(step, "resident_message"),
        "operator_response": optional_str(step, "operator_response"),
        "selected_policy": optional_str(step, "selected_policy"),
        "q_values": _q_values(step.get("q_values"), where),
        "judge_stance": stance,
        "judge_confidence": as_float(judge.get("confidence"), f"{where}.judge.confidence"),
        "judge_reasoning": _judge_reasoning(judge, where),
        "ts": timestamp(step.get("timestamp"), tz, f"{where}.timestamp"),
        "extra": dumps(extra) if extra else None,
    }


def _q_values(value: Any, where: str) -> list[dict]:
    if value is None:
        return []
    value = expect_type(value, dict, f"{where}.q_values (policy → value)")
    return [
        {"policy": policy, "value": as_float(q, f"{where}.q_values[{policy!r}]")}
        for policy, q in value.items()
    ]


def _judge_reasoning(judge: dict, where: str) -> str | None:
    # The design document says `reasoning`; the deployed judge writes `reason`.
    value = first_of(judge, "reasoning", "reason")
    return None if value is None else expect_type(value, str, f"{where}.judge.reasoning")


# ---------------------------------------------------------------- participant files


def participant_row(record: dict, rel_path: str, tz: str) -> dict:
    participant_id = first_of(record, "participant_id", "participantId")
    if participant_id is not None:
        expect_type(participant_id, str, "participant_id")
    confirmation = record.get("confirmation_number")
    if confirmation is None:
        confirmation = PurePosixPath(rel_path).stem
    survey = record.get("survey")
    if survey is not None:
        expect_type(survey, dict, "survey")
    post_surveys = record.get("post_surveys")
    if post_surveys is not None:
        expect_type(post_surveys, list, "post_surveys")
    conversations = record.get("conversations")
    if conversations is not None:
        expect_type(conversations, list, "conversations")
    return {
        "confirmation_number": expect_type(confirmation, str, "confirmation_number"),
        "participant_id": participant_id,
        "status": optional_str(record, "status"),
        "completed_at": timestamp(record.get("completion_timestamp"), tz, "completion_timestamp"),
        "exit_at": timestamp(record.get("exit_timestamp"), tz, "exit_timestamp"),
        "exit_page": optional_str(record, "exit_page"),
        "n_conversations": len(conversations or []),
        "survey": None if survey is None else dumps(survey),
        "post_surveys": None if post_surveys is None else dumps(post_surveys),
        "extra": extra_json(record, PARTICIPANT_FIELDS),
    }
