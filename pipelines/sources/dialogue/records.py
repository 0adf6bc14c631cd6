"""One dialogue record → one bronze row, or a RecordError: a conversation line (`turns`, tags,
quality) or a feedback event line (rating / reward / comment on a conversation or one turn).

Only syntax and types are judged here; a rating out of range, or an event on a conversation or
turn that does not exist, is judged in silver (`pipelines.transforms.dialogue`).
"""

from __future__ import annotations

from typing import Any

from pipelines.sources.base import RecordError, dumps, stable_hash
from pipelines.sources.values import (
    as_float,
    expect_type,
    first_of,
    int64,
    parse_ts,
    require,
    unknown_fields,
)

SOURCE = "dialogue"

_CONVERSATION_FIELDS = frozenset(
    {"conversation_id", "turns", "tags", "quality", "created_at", "updated_at"}
)
_TURN_FIELDS = frozenset({"role", "content"})
_TURN_TS_FIELDS = ("ts", "timestamp", "created_at")
_EVENT_FIELDS = frozenset(
    {"event_id", "conversation_id", "turn_index", "rating", "reward", "comment"}
)
_EVENT_TS_FIELDS = ("created_at", "timestamp")
# the fields a record's `extra` leaves out, by the timestamp field it holds (None: none)
_TURN_KNOWN = {None: _TURN_FIELDS} | {f: _TURN_FIELDS | {f} for f in _TURN_TS_FIELDS}
_EVENT_KNOWN = {None: _EVENT_FIELDS} | {f: _EVENT_FIELDS | {f} for f in _EVENT_TS_FIELDS}


# ---------------------------------------------------------------- conversations


def conversation_row(record: Any, dataset: str, tz: str) -> dict[str, Any]:
    record = expect_type(record, dict, "a conversation record")
    turns = expect_type(require(record, "turns"), list, "'turns'")
    quality, quality_raw = _number_or_raw(record.get("quality"))
    return {
        "dataset": dataset,
        "conversation_id": _id_text(record, "conversation_id"),
        "turns": [_turn(turn, i, tz) for i, turn in enumerate(turns)],
        "tags": _tags(record.get("tags")),
        "quality": quality,
        "quality_raw": quality_raw,
        "created_at": parse_ts(record.get("created_at"), tz),
        "updated_at": parse_ts(record.get("updated_at"), tz),
        "record_hash": stable_hash(dataset, record),
        "extra": _extra(record, _CONVERSATION_FIELDS),
    }


def _turn(turn: Any, index: int, tz: str) -> dict[str, Any]:
    where = f"turns[{index}]"
    turn = expect_type(turn, dict, where)
    try:
        role = expect_type(require(turn, "role"), str, "'role'")
        content = expect_type(require(turn, "content"), str, "'content'")
        ts_field = _first_present(turn, _TURN_TS_FIELDS)
        ts = parse_ts(turn[ts_field], tz) if ts_field else None
    except RecordError as err:
        raise RecordError(err.kind, f"{where}: {err.message}") from None
    known = _TURN_KNOWN[ts_field]
    return {"role": role, "content": content, "ts": ts, "extra": _extra(turn, known)}


def _tags(value: Any) -> list[str] | None:
    if value is None:
        return None
    tags = expect_type(value, list, "'tags'")
    for tag in tags:
        expect_type(tag, str, "each tag")
    return tags


# ---------------------------------------------------------------- feedback events


def event_row(record: Any, dataset: str, tz: str) -> dict[str, Any]:
    record = expect_type(record, dict, "a feedback event")
    event_id = _optional_id_text(record, "event_id")
    rating, rating_raw = _number_or_raw(record.get("rating"))
    reward = as_float(record.get("reward"), "'reward'")
    comment = record.get("comment")
    if comment is not None:
        expect_type(comment, str, "'comment'")
    if rating is None and rating_raw is None and reward is None and not comment:
        raise RecordError("missing_field", "event carries no 'rating', 'reward' or 'comment'")
    ts_field = _first_present(record, _EVENT_TS_FIELDS)
    key = ("event_id", event_id) if event_id is not None else ("content", record)
    return {
        "dataset": dataset,
        "event_id": event_id,
        "event_key": stable_hash(SOURCE, dataset, *key),
        "conversation_id": _id_text(record, "conversation_id"),
        "turn_index": _turn_index(record.get("turn_index")),
        "rating": rating,
        "rating_raw": rating_raw,
        "reward": reward,
        "comment": comment,
        "observed_at": parse_ts(record[ts_field], tz) if ts_field else None,
        "record_hash": stable_hash(dataset, record),
        "extra": _extra(record, _EVENT_KNOWN[ts_field]),
    }


def _turn_index(value: Any) -> int | None:
    # Absent = feedback on the whole conversation. Floats and numeric strings are rejected:
    # "2.5" or "2" written as text means the producer is not writing indexes.
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise RecordError("bad_type", f"'turn_index' should be an integer, got {value!r}")
    return int64(value, "'turn_index'")


# ---------------------------------------------------------------- shared field rules


def _id_text(record: dict, name: str) -> str:
    value = _optional_id_text(record, name)
    if value is None:
        raise RecordError("missing_field", f"missing field {name!r}")
    return value


def _optional_id_text(record: dict, name: str) -> str | None:
    value = first_of(record, name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise RecordError("bad_type", f"{name!r} should be a string, got {type(value).__name__}")
    text = str(value).strip()
    return text or None


def _first_present(record: dict, names: tuple[str, ...]) -> str | None:
    """The first of `names` the record holds a non-null value under (a loop: a generator made per
    turn and event cost more than the lookups)."""
    for name in names:
        if record.get(name) is not None:
            return name
    return None


def _number_or_raw(value: Any) -> tuple[float | None, str | None]:
    """A numeric value as float, anything else present as JSON text (judged later in silver)."""
    if value is None:
        return None, None
    try:
        return as_float(value, "value"), None
    except RecordError:
        return None, dumps(value)


def _extra(record: dict, known: frozenset[str] | set[str]) -> str | None:
    if record.keys() <= known:  # the usual record: no dict of nothing made to find that out
        return None
    extra = unknown_fields(record, known)
    return dumps(extra) if extra else None
