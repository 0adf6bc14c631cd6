"""Targeted hostile inputs, each with the specific quarantine kind it must get: NaN/Infinity
literals, invalid UTF-8, duplicate keys, absurd timestamps, wrong types in every field, missing
keys, and `.sqlite` files that are not SQLite (or are cut short)."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime

import pytest
from polars.testing import assert_frame_equal

from pipelines.sources.base import ERROR_KINDS
from tests.robustness.harness import (
    DECISION_TABLE,
    JSON_KINDS,
    KINDS,
    Kind,
    dumps_with_raw,
    jsonl_units,
    kind,
    kinds_found,
    mutate,
    parse,
    paths,
    replace_unit,
    seed_records,
    sqlite_columns,
    sqlite_database,
    sqlite_edit,
    sqlite_rows,
    validate_results,
)
from tests.robustness.strategies import ABSURD_TIMESTAMPS, NAN_LITERALS, TYPE_REPRESENTATIVES

DECISION_SQLITE = kind("decision_sqlite")
ONE_PER_TYPE = (None, True, 7, 1.5, "text", [1, "a"], {"k": None})
MIN_TS, MAX_TS = datetime(1990, 1, 1, tzinfo=UTC), datetime(2100, 1, 1, tzinfo=UTC)


def edit_first(
    k: Kind, path: tuple, raw: bytes | None = None, value=None, delete: bool = False
) -> bytes:
    record = seed_records(k)[0]
    if delete:
        edited, raw = mutate(record, path, "delete"), None
    elif raw is not None:
        edited = mutate(record, path, "raw")
    else:
        edited = mutate(record, path, "set", value)
    if k.shape == "jsonl":
        return replace_unit(k.seed, 0, dumps_with_raw(edited, raw))
    return dumps_with_raw(edited, raw, indent=2)


def first_record_kinds(k: Kind, result) -> list[str]:
    if k.shape == "json":
        return [q.error_kind for q in result.quarantine if q.locator == "file"] or [
            q.error_kind for q in result.quarantine
        ]
    start = jsonl_units(k.seed)[0][0]
    return [q.error_kind for q in result.quarantine if q.locator.endswith(f"(byte {start})")]


def top_level_field(k: Kind) -> str:
    return next(iter(seed_records(k)[0]))


# ---------------------------------------------------------------- NaN / Infinity


@pytest.mark.parametrize("k", JSON_KINDS, ids=str)
@pytest.mark.parametrize("literal", NAN_LITERALS, ids=lambda b: b.decode()[:12])
def test_nan_and_infinity_literals_are_invalid_json(k: Kind, literal: bytes) -> None:
    """orjson rejects NaN/Infinity and numbers that overflow a double: the record is
    `invalid_json` (not `truncated`, not a crash), and its neighbours are kept."""
    result = parse(k, edit_first(k, (top_level_field(k),), raw=literal))
    assert first_record_kinds(k, result) == ["invalid_json"], result.quarantine
    if k.shape == "jsonl" and not k.active:
        assert result.n_bronze == len(jsonl_units(k.seed)) - 1


@pytest.mark.parametrize("column", ["decision", "metadata", "outcome", "rag_context"])
@pytest.mark.parametrize("literal", [b"NaN", b"Infinity", b"-Infinity"])
def test_nan_in_a_sqlite_json_column_is_invalid_json(column: str, literal: bytes) -> None:
    text = '{"action": "POSTED", "sessionId": "s", "confidence": ' + literal.decode() + "}"
    data = sqlite_edit(
        DECISION_SQLITE.seed, (f"UPDATE {DECISION_TABLE} SET {column} = ? WHERE rowid = 2", (text,))
    )
    result = parse(DECISION_SQLITE, data)
    assert [(q.locator, q.error_kind) for q in result.quarantine] == [("row id 2", "invalid_json")]


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-inf", "1e400"])
def test_nan_as_a_numeric_string_is_bad_value(value: str) -> None:
    """Numbers-as-strings are accepted, so "NaN" parses as a float: refused as not finite."""
    k = kind("dialogue_feedback")
    result = parse(k, edit_first(k, ("reward",), value=value))
    assert first_record_kinds(k, result) == ["bad_value"]


# ---------------------------------------------------------------- invalid UTF-8


@pytest.mark.parametrize("k", JSON_KINDS, ids=str)
@pytest.mark.parametrize(
    "raw",
    [b'"\xff"', b'"ok\xfe\xffok"', b'"\xc0\xaf"', b'"\xed\xa0\x80"', b'"a\xe2\x82b"'],
    ids=["ff", "fe-ff", "overlong", "surrogate", "cut-mid-string"],
)
def test_invalid_utf8_is_invalid_encoding(k: Kind, raw: bytes) -> None:
    result = parse(k, edit_first(k, (top_level_field(k),), raw=raw))
    assert first_record_kinds(k, result) == ["invalid_encoding"], result.quarantine


@pytest.mark.parametrize("k", JSON_KINDS, ids=str)
def test_file_cut_inside_a_utf8_character_is_truncated(k: Kind) -> None:
    record = seed_records(k)[0]
    cut = dumps_with_raw(mutate(record, ("zz",), "set", "€uro"))
    cut = cut[: cut.index("€".encode()) + 2]  # two of the three bytes of €
    if k.shape == "jsonl":
        data = k.seed.rstrip() + b"\n" + cut if not k.active else cut
    else:
        data = cut
    result = parse(k, data)
    if k.active:
        assert not result.quarantine and len(result.pending) == 1
    else:
        assert kinds_found(result) == {"truncated"}, result.quarantine


def test_sqlite_text_that_is_not_utf8_quarantines_only_its_row() -> None:
    data = sqlite_edit(
        DECISION_SQLITE.seed,
        (
            f"UPDATE {DECISION_TABLE} SET actor_name = CAST(? AS TEXT) WHERE rowid = 2",
            (b"\xffbad",),
        ),
    )
    result = parse(DECISION_SQLITE, data)
    assert [(q.locator, q.error_kind) for q in result.quarantine] == [
        ("row id 2", "invalid_encoding")
    ]
    assert result.n_bronze == len(sqlite_rows(DECISION_SQLITE.seed)) - 1


# ---------------------------------------------------------------- duplicate keys


@pytest.mark.parametrize("k", JSON_KINDS, ids=str)
def test_duplicate_keys_keep_the_last_value_and_cost_nothing(k: Kind) -> None:
    """RFC 8259 leaves duplicate names undefined; orjson keeps the last. Writing a field twice
    with its own value must change nothing."""
    field = top_level_field(k)
    record = seed_records(k)[0]
    same = json.dumps(record[field]).encode()
    data = edit_first(k, (field,), raw=same + b"," + json.dumps(field).encode() + b":" + same)
    baseline, result = parse(k, k.seed), parse(k, data)
    assert result.quarantine == []
    assert result.tables.keys() == baseline.tables.keys()
    for name, frame in baseline.tables.items():
        # The edited line is longer: the byte offsets in the locators of the records after it move.
        assert_frame_equal(
            result.tables[name].drop("locator", strict=False), frame.drop("locator", strict=False)
        )


def test_duplicate_key_last_value_wins() -> None:
    k = kind("dialogue_conversations")
    data = edit_first(k, ("conversation_id",), raw=b'"first","conversation_id":"second"')
    ids = parse(k, data).tables["dialogue_conversations"]["conversation_id"].to_list()
    assert "second" in ids and "first" not in ids


# ---------------------------------------------------------------- absurd timestamps


def _looks_like_time(key) -> bool:
    key = str(key)
    return "timestamp" in key.lower() or key == "ts" or key.endswith(("_at", "At"))


def _datetimes(value):
    if isinstance(value, datetime):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _datetimes(v)
    elif isinstance(value, list):
        for v in value:
            yield from _datetimes(v)


@pytest.mark.parametrize("k", JSON_KINDS, ids=str)
def test_absurd_timestamps_never_reach_bronze(k: Kind) -> None:
    """Every timestamp-like field of a record set to every absurd value: the record is refused
    (bad_value / bad_type) or kept with the field as text; no bronze datetime leaves 1990–2100."""
    record = seed_records(k)[0]
    time_paths = [p for p in paths(record, max_depth=4) if p and _looks_like_time(p[-1])]
    if not time_paths:
        pytest.skip(f"{k} records have no timestamp field")
    values = [v for v in ABSURD_TIMESTAMPS if _is_json(v)]
    edited = [
        dumps_with_raw(mutate(record, path, "raw"), raw) for path in time_paths for raw in values
    ]
    if k.shape == "jsonl":
        results = [parse(k, b"\n".join(edited) + b"\n")]
    else:
        results = [parse(k, doc) for doc in edited]
    for result in results:
        assert kinds_found(result) <= {"bad_value", "bad_type", "missing_field"}, result.quarantine
        for frame in result.tables.values():
            for row in frame.to_dicts():
                for ts in _datetimes(row):
                    assert MIN_TS <= ts < MAX_TS, ts


def _is_json(raw: bytes) -> bool:
    try:
        json.loads(raw)
    except ValueError:
        return False
    return True


# ---------------------------------------------------------------- wrong types, missing keys


@pytest.mark.parametrize("k", JSON_KINDS, ids=str)
def test_every_field_with_every_wrong_type_and_every_field_missing(k: Kind) -> None:
    """Exhaustive: each field (to depth 3) of the first seed records replaced by a value of every
    JSON type (every sub-case down to depth 2, one per type below), and each field removed.
    Nothing may raise, nothing may be lost."""
    records = seed_records(k)
    edits = []
    for record in records[:3]:
        for path in paths(record, max_depth=3):
            values = TYPE_REPRESENTATIVES if len(path) <= 2 else ONE_PER_TYPE
            edits += [mutate(record, path, "set", v) for v in values]
            if path:
                edits.append(mutate(record, path, "delete"))
    if k.shape == "jsonl":
        for start in range(0, len(edits), 400):
            chunk = edits[start : start + 400]
            body = b"\n".join(dumps_with_raw(e) for e in chunk) + b"\n"
            result = parse(k, body)
            assert kinds_found(result) <= set(ERROR_KINDS) - {
                "unreadable",
                "too_large",
                "truncated",
            }
    else:
        results = [parse(k, dumps_with_raw(edited, indent=2), validate=False) for edited in edits]
        for result in results:
            assert kinds_found(result) <= set(ERROR_KINDS) - {
                "unreadable",
                "too_large",
                "truncated",
            }
        validate_results(k, results)


def test_every_sqlite_column_with_every_storage_class_and_every_column_missing() -> None:
    seed = DECISION_SQLITE.seed
    columns = sqlite_columns(seed)
    values = [
        None,
        0,
        -1,
        2**63 - 1,
        -(2**63),
        1.5,
        float("inf"),
        float("-inf"),
        "",
        "text",
        "12",
        "[]",
        "{}",
        '{"k": null}',
        "null",
        b"",
        b"\x00\xff",
        b"\x1f\x8b\x08",
        gzip.compress(b"[]"),
    ]
    results = []
    for column in columns:
        for value in values:
            data = sqlite_edit(
                seed, (f'UPDATE OR IGNORE {DECISION_TABLE} SET "{column}" = ?', (value,))
            )
            results.append(parse(DECISION_SQLITE, data, validate=False))
        keep = [c for c in columns if c != column]
        rows = [tuple(r[c] for c in keep) for r in sqlite_rows(seed)]
        results.append(parse(DECISION_SQLITE, sqlite_database(keep, rows), validate=False))
        assert results[-1].records_read == len(rows)
    validate_results(DECISION_SQLITE, results)


# ---------------------------------------------------------------- SQLite files that are not SQLite


def _real_db_without_table() -> bytes:
    return sqlite_database(["a"], [(1,)], table="something_else")


NOT_SQLITE = {
    "empty": b"",
    "csv": b"id,timestamp\nd-1,1717320000000\n",
    "json": b'{"id": "d-1"}',
    "random": bytes(range(256)) * 8,
    "header only": b"SQLite format 3\x00",
    "header then garbage": b"SQLite format 3\x00" + b"\xab" * 4000,
    "gzipped database": gzip.compress(DECISION_SQLITE.seed),
    "zeros": b"\x00" * 8192,
}


@pytest.mark.parametrize("name", NOT_SQLITE)
def test_a_sqlite_file_that_is_not_sqlite_is_unreadable(name: str) -> None:
    result = parse(DECISION_SQLITE, NOT_SQLITE[name])
    assert (result.records_read, result.n_bronze) == (1, 0)
    assert [(q.locator, q.error_kind) for q in result.quarantine] == [("file", "unreadable")]


def test_a_sqlite_database_without_the_table_is_unreadable() -> None:
    result = parse(DECISION_SQLITE, _real_db_without_table())
    assert [(q.locator, q.error_kind) for q in result.quarantine] == [("file", "unreadable")]
    assert "something_else" in result.quarantine[0].message


def test_truncated_sqlite_at_every_page_boundary_and_inside_the_header() -> None:
    seed = DECISION_SQLITE.seed
    page = int.from_bytes(seed[16:18], "big") or 65536
    cuts = sorted(
        {
            0,
            1,
            15,
            16,
            50,
            99,
            100,
            101,
            *range(page, len(seed), page),
            *range(page // 2, len(seed), page),
            len(seed) - 1,
        }
    )
    n_rows = len(sqlite_rows(seed))
    for cut in cuts:
        result = parse(DECISION_SQLITE, seed[:cut])
        assert result.records_read <= n_rows + 1
        assert kinds_found(result) <= {"unreadable"} | set(ERROR_KINDS) - {"truncated"}
        if cut < 100:  # not even a whole header
            assert kinds_found(result) == {"unreadable"} and result.n_bronze == 0


@pytest.mark.parametrize("k", KINDS, ids=str)
def test_empty_and_whitespace_files(k: Kind) -> None:
    for data in (b"", b"\n", b"   \n\t\n", b"\xef\xbb\xbf", b"\xef\xbb\xbf\n"):
        result = parse(k, data)
        if k.shape == "jsonl":
            assert result.records_read == 0
        else:
            assert result.records_read == 1 and kinds_found(result) <= {"truncated", "unreadable"}
