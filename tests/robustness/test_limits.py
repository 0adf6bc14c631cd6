"""Bounded memory: the limits in Settings.limits (record size, nesting depth, decompressed size,
file size) are enforced by every adapter, and exceeding one is quarantined as `too_large`."""

from __future__ import annotations

import base64
import tracemalloc

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipelines.config.settings import Limits, Settings
from tests.robustness.harness import (
    DECISION_TABLE,
    JSON_KINDS,
    KINDS,
    SETTINGS,
    Kind,
    dumps_with_raw,
    gzip_bomb,
    gzip_json,
    jsonl_units,
    kind,
    kinds_found,
    mutate,
    parse,
    replace_unit,
    seed_records,
    small_settings,
    sqlite_edit,
)

DECISION_JSONL = kind("decision_jsonl")
DECISION_SQLITE = kind("decision_sqlite")


def with_field(k: Kind, field: str, raw: bytes) -> bytes:
    """The seed file with top-level `field` of its first record set to the raw JSON `raw`."""
    record = seed_records(k)[0]
    edited = mutate(record, (field,), "raw")
    if k.shape == "jsonl":
        return replace_unit(k.seed, 0, dumps_with_raw(edited, raw))
    return dumps_with_raw(edited, raw, indent=2)


def first_record_kinds(k: Kind, result) -> set[str]:
    """Quarantine kinds of the edited record (the file itself for whole-file kinds)."""
    if k.shape == "json":
        return kinds_found(result)
    start = jsonl_units(k.seed)[0][0]
    return {q.error_kind for q in result.quarantine if q.locator.endswith(f"(byte {start})")}


# ---------------------------------------------------------------- gzip bombs (decision contexts)


BOMB = 64 * 1024 * 1024  # inflates to 64 MiB of valid JSON; the default limit is 8 MiB


def _bomb_text() -> str:
    return "gzip:" + base64.b64encode(gzip_bomb(BOMB)).decode()


@pytest.mark.parametrize("where", ["jsonl gzip: text", "sqlite gzip: text", "sqlite gzip BLOB"])
def test_gzip_bomb_in_a_rag_context_is_too_large_in_bounded_memory(where: str) -> None:
    assert len(gzip_bomb(BOMB)) < 200_000
    if where.startswith("jsonl"):
        k, data = (
            DECISION_JSONL,
            with_field(DECISION_JSONL, "ragContext", dumps_with_raw(_bomb_text())),
        )
    else:
        value = _bomb_text() if "text" in where else gzip_bomb(BOMB)
        k = DECISION_SQLITE
        data = sqlite_edit(
            k.seed, (f"UPDATE {DECISION_TABLE} SET rag_context = ? WHERE rowid = 1", (value,))
        )
    tracemalloc.start()
    try:
        result = parse(k, data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    bomb_rows = [q for q in result.quarantine if q.locator in ("row id 1", "line 1 (byte 0)")]
    assert [q.error_kind for q in bomb_rows] == ["too_large"], result.quarantine
    assert "inflates to more than" in bomb_rows[0].message
    assert result.n_bronze == len(seed_records(k)) - 1  # the other records are untouched
    # Never inflated past the limit: far below the 64 MiB the bomb expands to.
    assert peak < 4 * SETTINGS.limits.max_decompressed_bytes, peak


@pytest.mark.parametrize("k", [DECISION_JSONL, DECISION_SQLITE], ids=str)
def test_decompressed_size_limit_is_configurable(k: Kind) -> None:
    context = {"identity": {"systemPrompt": "p" * 5000}}
    value = "gzip:" + base64.b64encode(gzip_json(context)).decode()
    if k.shape == "jsonl":
        data = with_field(k, "ragContext", dumps_with_raw(value))
    else:
        data = sqlite_edit(
            k.seed, (f"UPDATE {DECISION_TABLE} SET rag_context = ? WHERE rowid = 1", (value,))
        )
    tight = parse(k, data, small_settings(max_decompressed_bytes=4096))
    assert [(q.locator, q.error_kind) for q in tight.quarantine] == [
        (_first_locator(k), "too_large")
    ]
    roomy = parse(k, data, small_settings(max_decompressed_bytes=6000))
    assert not roomy.quarantine
    row = roomy.tables["decision_records"].row(0, named=True)
    assert row["rag_context_encoding"] == "gzip" and row["system_prompt"] == "p" * 5000


def _first_locator(k: Kind) -> str:
    return "row id 1" if k.shape == "sqlite" else f"line 1 (byte {jsonl_units(k.seed)[0][0]})"


# ---------------------------------------------------------------- nesting depth


def _nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


@pytest.mark.parametrize("k", JSON_KINDS, ids=str)
def test_nesting_one_level_past_the_limit_is_too_large(k: Kind) -> None:
    limit = 40
    settings = small_settings(max_nesting_depth=limit)
    field = "zz_deep"  # an unknown field: kept in `extra` when within the limit
    # The record object itself is level 1, so a value nested `limit - 1` deep is exactly at it.
    at_limit = parse(k, with_field(k, field, _nested(limit - 1)), settings)
    past_limit = parse(k, with_field(k, field, _nested(limit)), settings)
    assert "too_large" not in first_record_kinds(k, at_limit)
    assert first_record_kinds(k, past_limit) == {"too_large"}


@pytest.mark.parametrize("k", JSON_KINDS, ids=str)
@pytest.mark.parametrize("depth", [65, 1_100, 200_000])
def test_deep_nesting_is_too_large_with_default_limits(k: Kind, depth: int) -> None:
    """Past orjson's own recursion limit (1024) too: the depth check runs first, no
    RecursionError."""
    result = parse(k, with_field(k, "zz_deep", _nested(depth)))
    assert first_record_kinds(k, result) == {"too_large"}


@pytest.mark.parametrize("column", ["decision", "metadata", "rag_context", "visual_context"])
def test_deep_nesting_inside_a_sqlite_json_column_is_too_large(column: str) -> None:
    deep = '{"action": "POSTED", "sessionId": "s", "x": ' + "[" * 100 + "]" * 100 + "}"
    data = sqlite_edit(
        DECISION_SQLITE.seed, (f"UPDATE {DECISION_TABLE} SET {column} = ? WHERE rowid = 2", (deep,))
    )
    result = parse(DECISION_SQLITE, data)
    assert [(q.locator, q.error_kind) for q in result.quarantine] == [("row id 2", "too_large")]


# ---------------------------------------------------------------- record and file size


@pytest.mark.parametrize("k", JSON_KINDS, ids=str)
def test_huge_string_fits_default_limits_but_not_a_small_record_limit(k: Kind) -> None:
    data = with_field(k, "zz_huge", b'"' + b"x" * 2_000_000 + b'"')
    assert "too_large" not in first_record_kinds(k, parse(k, data))
    small = parse(k, data, small_settings(max_record_bytes=1_000_000))
    assert first_record_kinds(k, small) == {"too_large"}


@pytest.mark.parametrize("k", KINDS, ids=str)
def test_file_over_max_file_bytes_is_one_too_large_row(k: Kind) -> None:
    result = parse(k, k.seed, small_settings(max_file_bytes=len(k.seed) - 1))
    assert result.records_read == 1 and result.n_bronze == 0
    assert [(q.locator, q.error_kind) for q in result.quarantine] == [("file", "too_large")]
    # A file of exactly the limit is read as usual (an active scenario's last record stays pending).
    assert parse(k, k.seed, small_settings(max_file_bytes=len(k.seed))).quarantine == []


@pytest.mark.parametrize("k", KINDS, ids=str)
@given(
    record_bytes=st.integers(min_value=1, max_value=6000),
    depth=st.integers(min_value=1, max_value=8),
    decompressed=st.integers(min_value=1, max_value=6000),
)
def test_clean_files_under_small_limits_only_ever_quarantine_too_large(
    k: Kind, record_bytes: int, depth: int, decompressed: int
) -> None:
    """Valid data under random small limits: whatever is refused is refused as `too_large`, and
    every record bigger than the record limit is refused."""
    settings = Settings(
        limits=Limits(
            max_record_bytes=record_bytes,
            max_nesting_depth=depth,
            max_decompressed_bytes=decompressed,
        )
    )
    result = parse(k, k.seed, settings)
    assert kinds_found(result) <= {"too_large"}, result.quarantine
    if k.shape == "jsonl":
        too_big = sum(1 for start, end, _ in jsonl_units(k.seed) if end - start > record_bytes)
        assert sum(q.error_kind == "too_large" for q in result.quarantine) >= too_big
    elif k.shape == "json" and len(k.seed.strip()) > record_bytes:
        assert result.n_bronze == 0


@pytest.mark.parametrize("k", KINDS, ids=str)
def test_clean_files_under_default_limits_are_fully_kept(k: Kind) -> None:
    result = parse(k, k.seed)
    assert not result.quarantine
    # A participant file is one record plus one per conversation it holds.
    assert result.n_bronze == result.records_read >= len(seed_records(k))
