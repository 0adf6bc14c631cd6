"""Regression tests: one per adapter crash or misclassification the fuzz suite found."""

from __future__ import annotations

import pytest

from pipelines.sources.base import RecordError
from pipelines.sources.values import as_int, parse_ts
from tests.robustness.harness import (
    DECISION_TABLE,
    dumps_with_raw,
    jsonl_units,
    kind,
    kinds_found,
    mutate,
    parse,
    replace_unit,
    seed_records,
    sqlite_edit,
    sqlite_rows,
)

TOO_BIG = (2**63, 2**64 - 1)  # what orjson still reads as int (past that: float)


def _first_jsonl_record_with(kind_name: str, path: tuple, value) -> tuple:
    k = kind(kind_name)
    record = mutate(seed_records(k)[0], path, "set", value)
    return k, replace_unit(k.seed, 0, dumps_with_raw(record))


# Crash 1: integers past Int64 (JSON allows any size; orjson reads up to 2**64-1) reached polars,
# which raised ComputeError while building the bronze frame.
@pytest.mark.parametrize("value", TOO_BIG)
@pytest.mark.parametrize(
    "kind_name, path",
    [
        ("scenario_completed", ("round",)),
        ("study_master", ("turn_count",)),
        ("dialogue_feedback", ("turn_index",)),
        ("decision_jsonl", ("metadata", "sequenceNumber")),
    ],
)
def test_integers_outside_int64_are_bad_value(kind_name: str, path: tuple, value: int) -> None:
    k, data = _first_jsonl_record_with(kind_name, path, value)
    result = parse(k, data)
    assert [q.error_kind for q in result.quarantine] == ["bad_value"]
    assert "64-bit" in result.quarantine[0].message


def test_integers_outside_int64_in_whole_file_kinds_are_bad_value() -> None:
    k = kind("social_rl_round")
    doc = seed_records(k)[0]
    doc["messages"][0]["turn_number"] = 2**64 - 1
    assert kinds_found(parse(k, dumps_with_raw(doc))) == {"bad_value"}


def test_as_int_is_exact_for_large_integers_and_bounded() -> None:
    assert as_int(2**63 - 1, "n") == 2**63 - 1
    assert as_int(2**53 + 1, "n") == 2**53 + 1  # no round trip through float
    with pytest.raises(RecordError) as err:
        as_int(2**63, "n")
    assert err.value.kind == "bad_value"


# Crash 2: an ISO timestamp at the calendar's edge with an offset overflowed in astimezone().
@pytest.mark.parametrize("text", ["9999-12-31T23:59:59-10:00", "0001-01-01T00:00:00+10:00"])
def test_iso_timestamp_overflowing_utc_is_bad_value(text: str) -> None:
    with pytest.raises(RecordError) as err:
        parse_ts(text)
    assert err.value.kind == "bad_value"
    k, data = _first_jsonl_record_with("dialogue_feedback", ("created_at",), text)
    assert kinds_found(parse(k, data)) == {"bad_value"}


# Crash 3: a participant file whose `conversations` is not a list hit len() on an int / bool.
@pytest.mark.parametrize("value", [5, True, "abc", {"a": 1}])
def test_participant_conversations_of_the_wrong_type_is_bad_type(value) -> None:
    k = kind("study_completed")
    doc = seed_records(k)[0]
    doc["conversations"] = value
    result = parse(k, dumps_with_raw(doc, indent=2))
    assert [(q.locator, q.error_kind) for q in result.quarantine] == [("participant", "bad_type")]


# Crash 4: an IQL step whose `turn` is "" read as None and was compared with 1.
def test_iql_turn_empty_string_is_missing_field() -> None:
    k = kind("study_session_file")
    doc = seed_records(k)[0]
    doc["iql_data"][0]["turn"] = ""
    assert kinds_found(parse(k, dumps_with_raw(doc, indent=2))) == {"missing_field"}


# Crash 5: a corrupt SQLite schema made sqlite3 raise UnicodeDecodeError, not DatabaseError.
def test_sqlite_with_a_corrupt_schema_byte_is_unreadable() -> None:
    k = kind("decision_sqlite")
    corrupt = bytearray(k.seed)
    corrupt[4024] = 0x80  # inside the schema text of the fixture database
    result = parse(k, bytes(corrupt))
    assert (result.records_read, result.n_bronze) == (1, 0)
    assert [(q.locator, q.error_kind) for q in result.quarantine] == [("file", "unreadable")]


# Bug 6: a TEXT cell that is not UTF-8 aborted the whole query: every later row was lost as
# "corrupt". Now only that row is quarantined, as invalid_encoding (test_adversarial covers it),
# and the bytes never reach bronze.
def test_sqlite_non_utf8_text_in_the_last_row_keeps_all_earlier_rows() -> None:
    k = kind("decision_sqlite")
    n = len(sqlite_rows(k.seed))
    data = sqlite_edit(
        k.seed,
        (f"UPDATE {DECISION_TABLE} SET domain = CAST(? AS TEXT) WHERE rowid = 1", (b"\x80",)),
    )
    result = parse(k, data)
    assert [(q.locator, q.error_kind) for q in result.quarantine] == [
        ("row id 1", "invalid_encoding")
    ]
    assert result.n_bronze == n - 1


# Bug 7: a column named `_rowid_` shadowed the adapter's rowid alias: null ordinals, bronze
# failing its model.
@pytest.mark.parametrize("name", ["_rowid_", "rowid", "oid"])
def test_sqlite_column_shadowing_a_rowid_alias(name: str) -> None:
    k = kind("decision_sqlite")
    data = sqlite_edit(
        k.seed,
        (f'ALTER TABLE {DECISION_TABLE} ADD COLUMN "{name}"', ()),
        (f'UPDATE {DECISION_TABLE} SET "{name}" = ?', ("x",)),
    )
    frame = parse(k, data).tables["decision_records"]
    assert frame["ordinal"].to_list() == list(range(1, len(sqlite_rows(k.seed)) + 1))
    assert frame["locator"][0] == "row id 1"
    assert name in frame["extra"][0]


# Bug 8: a file cut inside a multi-byte character was `invalid_encoding`; it is `truncated`.
def test_jsonl_cut_inside_a_character_is_truncated() -> None:
    k = kind("dialogue_conversations")
    data = (
        k.seed.rstrip()
        + b'\n{"conversation_id": "c", "turns": [{"role": "user", "content": "\xe2\x82'
    )
    result = parse(k, data)
    assert kinds_found(result) == {"truncated"}
    assert result.n_bronze == len(jsonl_units(k.seed))


# Bug 9: a pretty-printed record cut right after one of its lines ends in a newline, so it was
# `invalid_json` in a closed file and never a pending tail in an active one.
def test_pretty_printed_record_cut_after_a_line() -> None:
    active = kind("scenario_active")
    units = jsonl_units(active.seed)
    second_start = units[1][0]
    cut = active.seed[: active.seed.index(b"\n", second_start) + 1]
    result = parse(active, cut)
    assert not result.quarantine and len(result.pending) == 1 and result.n_bronze == 1
    closed = kind("scenario_completed")
    result = parse(closed, cut)
    assert kinds_found(result) == {"truncated"} and result.n_bronze == 1


# Bug 10: the study master JSONL ignored max_file_bytes (every other kind enforces it);
# covered for every kind by test_limits.test_file_over_max_file_bytes_is_one_too_large_row.
