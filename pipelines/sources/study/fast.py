"""The usual shape of a study session → its bronze row, without the per-field checks of
`records.session_row`.

Almost every session the study writes has only known fields, each of its expected JSON type:
for those, the row is built here with a few type tests per value (a fifth of the cost). Anything
else — an unknown field, a number written as a string, an integer confidence, a bad value of any
kind — returns None, and the caller takes the per-record path, which gives the same row or the
specific error. So a row from here always equals `session_row`'s for the same record
(tests/unit/test_study_fast.py checks both on every fixture record).
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

from pipelines.sources.study.records import (
    HISTORY_FIELDS,
    HISTORY_ROLES,
    JUDGE_FIELDS,
    SESSION_FIELDS,
    STEP_FIELDS,
)
from pipelines.sources.values import _MAX_TS, _MIN_TS, INT64_MAX, INT64_MIN, parse_ts


class _NotUsual(Exception):
    """The record is not of the usual shape: the per-record path decides."""


def session_values(record: Any, tz: str, enclosing: str | None = None) -> tuple | None:
    """The bronze values of a session of the usual shape, in the order of SESSION_VALUES (its
    history as (role, text) pairs, its IQL steps as STEP_VALUES tuples, their q-values as
    (policy, value) pairs); None for any other record."""
    if type(record) is not dict or not record.keys() <= SESSION_FIELDS:
        return None
    try:
        return _session(record, tz, enclosing)
    except Exception:  # noqa: BLE001 — _NotUsual, RecordError or worse: the per-record path decides
        return None


def session_row_fast(record: Any, tz: str, enclosing: str | None = None) -> dict | None:
    """`session_row(record, tz, enclosing)` for a session of the usual shape, else None."""
    values = session_values(record, tz, enclosing)
    return None if values is None else as_row(values)


# The columns of a study_sessions row the fast path gives, in its contract's order (`extra`, the
# last column of the row and of each struct, is always null here).
SESSION_VALUES = (
    "session_id",
    "participant_id",
    "participant_id_from",
    "character",
    "conversation_type",
    "persuasion_strategy",
    "turn_count",
    "history",
    "iql",
    "created_at",
    "ended_at",
    "scenario",
)
STEP_VALUES = (
    "turn",
    "resident_message",
    "operator_response",
    "selected_policy",
    "q_values",
    "judge_stance",
    "judge_confidence",
    "judge_reasoning",
    "ts",
)


def as_row(values: tuple) -> dict:
    """`session_values`' tuple as the row dict `session_row` gives."""
    row = dict(zip(SESSION_VALUES, values, strict=True))
    row["history"] = [{"role": r, "text": t, "extra": None} for r, t in row["history"]]
    row["iql"] = [_step_row(step) for step in row["iql"]]
    row["extra"] = None
    return row


def _step_row(step: tuple) -> dict:
    row = dict(zip(STEP_VALUES, step, strict=True))
    row["q_values"] = [{"policy": p, "value": v} for p, v in row["q_values"]]
    row["extra"] = None
    return row


def _session(record: dict, tz: str, enclosing: str | None) -> tuple:
    session_id = record.get("session_id")
    if type(session_id) is not str or not session_id.strip():
        raise _NotUsual
    turn_count = record.get("turn_count")
    if turn_count is not None and (type(turn_count) is not int or not _fits(turn_count)):
        raise _NotUsual
    participant_id, origin = _participant(record, enclosing)
    get = record.get
    return (
        session_id,
        participant_id,
        origin,
        _text(get("character")),
        _text(get("conversation_type")),
        _text(get("persuasion_strategy")),
        turn_count,
        [_history_entry(entry) for entry in _list(get("history"))],
        _iql(_list(get("iql_data")), tz),
        _ts(get("created_at"), tz),
        _ts(get("ended_at"), tz),
        _text(get("scenario")),
    )


def _fits(number: int) -> bool:
    return INT64_MIN <= number <= INT64_MAX


def _text(value: Any) -> str | None:
    if type(value) is not str and value is not None:
        raise _NotUsual
    return value


def _list(value: Any) -> list:
    value = value or []  # as session_row: null, absent and other empty values mean none
    if type(value) is not list:
        raise _NotUsual
    return value


def _participant(record: dict, enclosing: str | None) -> tuple[str | None, str | None]:
    for name, origin in (("participant_id", "record"), ("participantId", "participantId")):
        value = record.get(name)
        if value is not None and value != "":
            if type(value) is not str:
                raise _NotUsual
            return value, origin
    return (enclosing, "enclosing_file") if enclosing else (None, None)


def _history_entry(entry: Any) -> tuple[str, str | None]:
    if type(entry) is not dict or not entry.keys() <= HISTORY_FIELDS:
        raise _NotUsual
    role = entry.get("role")
    if type(role) is not str or role not in HISTORY_ROLES:
        raise _NotUsual
    return role, _text(entry.get("text"))


def _iql(steps: list, tz: str) -> list[tuple]:
    rows = [_step(step, tz) for step in steps]
    if len({row[0] for row in rows}) != len(rows):
        raise _NotUsual  # a repeated turn: the per-record path names it
    return rows


def _step(step: Any, tz: str) -> tuple:
    if type(step) is not dict or not step.keys() <= STEP_FIELDS:
        raise _NotUsual
    turn = step.get("turn")
    if type(turn) is not int or not 1 <= turn <= INT64_MAX:
        raise _NotUsual
    judge = step.get("judge") or {}
    if type(judge) is not dict or not judge.keys() <= JUDGE_FIELDS:
        raise _NotUsual
    stance = _text(judge.get("stance"))
    reasoning = judge.get("reasoning")
    get = step.get
    return (
        turn,
        _text(get("resident_message")),
        _text(get("operator_response")),
        _text(get("selected_policy")),
        _q_values(get("q_values")),
        None if stance is None else stance.upper(),
        _number(judge.get("confidence")),
        _text(judge.get("reason") if reasoning is None else reasoning),
        _ts(get("timestamp"), tz),
    )


def _ts(value: Any, tz: str) -> datetime | None:
    """`parse_ts` without its attempt to read the text as an epoch number first, which no text
    with a colon can be (the attempt fails with an exception, costly per value)."""
    if type(value) is not str or ":" not in value:
        return parse_ts(value, tz)
    parsed = datetime.fromisoformat(value.strip())
    if parsed.tzinfo is None and tz == "UTC":  # the usual case: a third cheaper than converting
        result = parsed.replace(tzinfo=UTC)
    else:
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=ZoneInfo(tz))
        result = parsed.astimezone(UTC)
    if not _MIN_TS <= result < _MAX_TS:
        raise _NotUsual
    return result


def _number(value: Any) -> float | None:
    if value is None:
        return None
    if type(value) is not float or not math.isfinite(value):
        raise _NotUsual
    return value


def _q_values(value: Any) -> list[tuple[str, float | None]]:
    if value is None:
        return []
    if type(value) is not dict:
        raise _NotUsual
    return [(policy, _number(q)) for policy, q in value.items()]
