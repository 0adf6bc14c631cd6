"""The decision adapter: SQLite + JSONL CoordinationDecision records → decision_records or
quarantine."""

from __future__ import annotations

import base64
import gzip
import random
import sqlite3
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest

from pipelines.config.settings import Limits, Settings
from pipelines.demo.decision import write as write_demo
from pipelines.schemas.bronze.decision import DecisionRecords
from pipelines.sources import decision
from pipelines.sources.base import ParseResult, RawFile

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CLEAN = FIXTURES / "clean"
DIRTY = FIXTURES / "dirty"
SETTINGS = Settings()


def parse_all(root: Path, settings: Settings = SETTINGS) -> dict:
    return {
        f.rel_path: decision.parse_file(f, f.path.read_bytes(), settings)
        for f in decision.discover(root)
    }


def rows_by_id(result) -> dict[str, dict]:
    return {r["decision_id"]: r for r in result.tables["decision_records"].to_dicts()}


def test_discover_finds_sqlite_and_jsonl_sorted_and_ignores_sql_sources():
    files = [f.rel_path for f in decision.discover(CLEAN)]
    assert files == [
        "decisions/continuum/coordination_decisions.sqlite",
        "decisions/continuum/exports/decisions-2024-06-03.jsonl",
    ]


def test_clean_fixture_parses_without_quarantine_and_validates():
    results = parse_all(CLEAN)
    for result in results.values():
        assert result.quarantine == []
        assert result.records_read == result.n_bronze
        DecisionRecords.validate(result.tables["decision_records"], lazy=True)
    assert [r.n_bronze for r in results.values()] == [5, 3]


def test_sqlite_rows_use_row_id_locators_and_decode_gzip_and_plain_rag_context():
    rows = rows_by_id(parse_all(CLEAN)["decisions/continuum/coordination_decisions.sqlite"])
    assert rows["d-001"]["locator"] == "row id 1"
    assert rows["d-001"]["rag_context_encoding"] == "gzip"
    assert rows["d-002"]["rag_context_encoding"] == "plain"
    assert rows["d-001"]["system_prompt"].startswith("You are Helper AI")
    assert orjson.loads(rows["d-001"]["rag_context"])["conversationHistory"][0]["name"] == "Joel"


def test_epoch_ms_and_iso_timestamps_become_utc():
    rows = rows_by_id(parse_all(CLEAN)["decisions/continuum/coordination_decisions.sqlite"])
    assert rows["d-001"]["ts"] == datetime(2024, 6, 2, 9, 20, tzinfo=UTC)
    assert rows["d-003"]["ts"] == datetime(2024, 6, 2, 9, 21, 30, tzinfo=UTC)


def test_outcome_fields_null_outcome_and_companion_suggestion_are_extracted():
    rows = rows_by_id(parse_all(CLEAN)["decisions/continuum/coordination_decisions.sqlite"])
    assert (rows["d-001"]["outcome_rating"], rows["d-001"]["outcome_was_good"]) == (4.0, True)
    assert rows["d-002"]["outcome"] is None and rows["d-002"]["outcome_rating"] is None
    assert rows["d-003"]["suggested_action"] == "POSTED" and rows["d-003"]["action"] == "SILENT"
    assert rows["d-004"]["outcome_rating"] == 0.35


def test_unknown_sqlite_column_and_jsonl_field_land_in_extra():
    results = parse_all(CLEAN)
    sqlite_rows = rows_by_id(results["decisions/continuum/coordination_decisions.sqlite"])
    jsonl_rows = rows_by_id(results["decisions/continuum/exports/decisions-2024-06-03.jsonl"])
    assert orjson.loads(sqlite_rows["d-001"]["extra"]) == {"schema_version": "2"}
    assert orjson.loads(jsonl_rows["d-006"]["extra"]) == {"exportedAt": 1717410000000}
    assert orjson.loads(sqlite_rows["d-001"]["decision_details"]) == {"responseTime": 2300}


def test_jsonl_camelcase_export_reads_like_the_sqlite_row():
    results = parse_all(CLEAN)
    a = rows_by_id(results["decisions/continuum/coordination_decisions.sqlite"])["d-001"]
    b = rows_by_id(results["decisions/continuum/exports/decisions-2024-06-03.jsonl"])["d-001"]
    assert b["locator"] == "line 1 (byte 0)" and b["rag_context_encoding"] == "object"
    same = [
        c
        for c in a
        if c not in {"file", "locator", "ordinal", "file_kind", "rag_context_encoding", "extra"}
    ]
    assert {c: a[c] for c in same} == {c: b[c] for c in same}


EXPECTED_DIRTY = {
    "decisions/broken/not_a_database.sqlite": [("file", "unreadable")],
    "decisions/broken/other_tables.sqlite": [("file", "unreadable")],
    "decisions/continuum/coordination_decisions.sqlite": [
        ("row id 2", "bad_value"),
        ("row id 3", "bad_value"),
        ("row id 4", "bad_type"),
        ("row id 5", "invalid_json"),
        ("row id 6", "missing_field"),
        ("row id 7", "bad_value"),
    ],
    "decisions/continuum/export.jsonl": [
        ("line 2 (byte 1039)", "invalid_json"),
        ("line 3 (byte 1109)", "missing_field"),
        ("line 4 (byte 2029)", "too_large"),
        ("line 5 (byte 14875)", "bad_type"),
        ("line 6 (byte 15900)", "bad_value"),
        ("line 7 (byte 16915)", "bad_value"),
        ("line 9 (byte 18793)", "truncated"),
    ],
}


def test_dirty_fixture_quarantines_each_bad_record_with_its_kind():
    results = parse_all(DIRTY)
    got = {
        path: sorted((q.locator, q.error_kind) for q in r.quarantine) for path, r in results.items()
    }
    assert got == {path: sorted(v) for path, v in EXPECTED_DIRTY.items()}


def test_dirty_fixture_keeps_good_records_and_loses_none():
    results = parse_all(DIRTY)
    for result in results.values():
        assert result.records_read == result.n_bronze + len(result.quarantine)
    assert sorted(rows_by_id(results["decisions/continuum/coordination_decisions.sqlite"])) == [
        "d-101",
        "d-108",
    ]
    assert sorted(rows_by_id(results["decisions/continuum/export.jsonl"])) == ["d-101", "d-117"]


def _one_record_jsonl(tmp_path: Path, rag_context: str) -> ParseResult:
    record = {
        "id": "x-1",
        "metadata": {"sessionId": "s"},
        "decision": {"action": "SILENT"},
        "ragContext": rag_context,
    }
    path = tmp_path / "decisions" / "one.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(orjson.dumps(record) + b"\n")
    settings = replace(SETTINGS, limits=Limits(max_decompressed_bytes=1000))
    return decision.parse_file(
        RawFile.under("decision", tmp_path, path), path.read_bytes(), settings
    )


def test_decompression_stops_at_the_configured_limit(tmp_path):
    bomb = "gzip:" + base64.b64encode(gzip.compress(b"[" + b" " * 5000 + b"]")).decode()
    result = _one_record_jsonl(tmp_path, bomb)
    assert [q.error_kind for q in result.quarantine] == ["too_large"]


def test_gzip_just_under_the_limit_is_accepted(tmp_path):
    payload = b'{"identity": {"systemPrompt": "short"}}' + b" " * 900
    result = _one_record_jsonl(
        tmp_path, "gzip:" + base64.b64encode(gzip.compress(payload)).decode()
    )
    assert (
        result.quarantine == [] and result.tables["decision_records"]["system_prompt"][0] == "short"
    )


def test_parse_file_never_writes_the_raw_sqlite_file(tmp_path):
    path = tmp_path / "decisions" / "db.sqlite"
    path.parent.mkdir()
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE coordination_decisions (id TEXT, decision TEXT, metadata TEXT)")
    conn.execute(
        "INSERT INTO coordination_decisions VALUES ('a', '{\"action\": \"POSTED\"}', "
        '\'{"sessionId": "s"}\')'
    )
    conn.commit()
    conn.close()
    before = path.read_bytes()
    result = decision.parse_file(RawFile.under("decision", tmp_path, path), before, SETTINGS)
    assert result.n_bronze == 1 and path.read_bytes() == before


def test_demo_writer_output_ingests_with_nothing_lost(tmp_path):
    write_demo(tmp_path, random.Random(3), scale=1)
    results = parse_all(tmp_path)
    # database, export, legacy dump, ratings/ratings.jsonl, two replay result files
    assert len(results) == 6
    kinds = sorted(q.error_kind for r in results.values() for q in r.quarantine)
    assert kinds == [
        "bad_type",
        "bad_value",
        "bad_value",  # ratings: a 9 on the 1-5 scale
        "bad_value",  # replays: a failed batch request
        "invalid_json",
        "missing_field",
        "too_large",
        "unreadable",
    ]
    for result in results.values():
        assert result.records_read == result.n_bronze + len(result.quarantine)
    assert sum(p.stat().st_size for p in tmp_path.rglob("*") if p.is_file()) < 1_000_000


@pytest.mark.parametrize("scale", [1, 2])
def test_demo_writer_is_deterministic_for_a_seed(tmp_path, scale):
    write_demo(tmp_path / "a", random.Random(11), scale)
    write_demo(tmp_path / "b", random.Random(11), scale)
    files_a = sorted(
        p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file()
    )
    assert files_a and all(
        (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes() for f in files_a
    )


def test_empty_sqlite_file_is_one_unreadable_record(tmp_path):
    path = tmp_path / "decisions" / "empty.sqlite"
    path.parent.mkdir()
    path.write_bytes(b"")
    result = decision.parse_file(RawFile.under("decision", tmp_path, path), b"", SETTINGS)
    assert result.records_read == 1
    assert [(q.locator, q.error_kind) for q in result.quarantine] == [("file", "unreadable")]


def _parse_records(tmp_path: Path, *records: dict) -> ParseResult:
    path = tmp_path / "decisions" / "ds" / "export.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return decision.parse_file(
        RawFile.under("decision", tmp_path, path), path.read_bytes(), SETTINGS
    )


def _minimal(
    decision_id: str, decision_fields: dict | None = None, outcome: dict | None = None, **top
) -> dict:
    return {
        "id": decision_id,
        "metadata": {"sessionId": "s"},
        "decision": {"action": "SILENT", **(decision_fields or {})},
        "outcome": outcome,
        **top,
    }


def test_seed_extension_fields_are_read_nested_or_top_level_and_leave_extra_and_details(tmp_path):
    nested = _minimal(
        "a",
        {
            "alternatives": [{"action": "POSTED", "confidence": 0.4}],
            "consensus": {"finalDecision": "override"},
            "companionSuggestion": {"suggestedAction": "POSTED", "wasFollowed": False},
        },
        {
            "wasGoodDecision": True,
            "followUp": {
                "conversationContinued": True,
                "userSatisfaction": 4,
                "mistakeCorrected": False,
            },
            "longTermOutcome": {"finalOutcome": "good"},
        },
    )
    top = _minimal(
        "b",
        alternatives=[{"action": "POSTED"}],
        consensus={"votes": {}},
        followUp={"mistakeCorrected": True},
        longTermOutcome={"finalOutcome": "disaster", "checkpoints": []},
    )
    result = _parse_records(tmp_path, nested, top)
    assert result.quarantine == []
    rows = rows_by_id(result)
    a, b = rows["a"], rows["b"]
    assert (a["was_followed"], orjson.loads(a["alternatives"]), orjson.loads(a["consensus"])) == (
        False,
        [{"action": "POSTED", "confidence": 0.4}],
        {"finalDecision": "override"},
    )
    assert (
        a["follow_up_conversation_continued"],
        a["follow_up_user_satisfaction"],
        a["follow_up_mistake_corrected"],
    ) == (True, 4.0, False)
    assert (
        a["long_term_outcome_final"] == "good"
        and a["decision_details"] is None
        and a["extra"] is None
    )
    assert (b["follow_up_mistake_corrected"], b["long_term_outcome_final"], b["extra"]) == (
        True,
        "disaster",
        None,
    )
    assert orjson.loads(b["alternatives"]) == [{"action": "POSTED"}]
    DecisionRecords.validate(result.tables["decision_records"], lazy=True)


@pytest.mark.parametrize(
    ("record", "kind"),
    [
        (_minimal("x", {"alternatives": {"action": "POSTED"}}), "bad_type"),
        (_minimal("x", {"alternatives": [{"confidence": 0.2}]}), "missing_field"),
        (_minimal("x", {"alternatives": [{"action": "POSTED", "confidence": "high"}]}), "bad_type"),
        (
            _minimal(
                "x", {"companionSuggestion": {"suggestedAction": "POSTED", "wasFollowed": "yes"}}
            ),
            "bad_type",
        ),
        (_minimal("x", outcome={"followUp": {"userSatisfaction": "very"}}), "bad_type"),
        (_minimal("x", outcome={"followUp": {"conversationContinued": 1}}), "bad_type"),
        (_minimal("x", longTermOutcome=["poor"]), "bad_type"),
    ],
)
def test_malformed_seed_extension_fields_are_quarantined_with_their_kind(tmp_path, record, kind):
    result = _parse_records(tmp_path, record)
    assert [q.error_kind for q in result.quarantine] == [kind] and result.n_bronze == 0


def test_demo_export_carries_one_decision_per_rule_case(tmp_path):
    write_demo(tmp_path, random.Random(3), scale=1)
    rows = rows_by_id(parse_all(tmp_path)["decisions/continuum/exports/decisions-export.jsonl"])
    cases = {k: v for k, v in rows.items() if k.startswith("case-")}
    assert set(cases) == {
        "case-worst-of-5",
        "case-self-0.7",
        "case-best-of-0-1",
        "case-ambiguous-1",
        "case-followed-cased",
        "case-followed-no-flag",
        "case-override-rated-bad",
        "case-extra-fields",
    }
    assert (
        cases["case-worst-of-5"]["outcome_rating"],
        cases["case-worst-of-5"]["outcome_was_good"],
    ) == (1.0, False)
    assert (
        cases["case-followed-cased"]["suggested_action"],
        cases["case-followed-cased"]["was_followed"],
    ) == ("posted", True)
    extra = cases["case-extra-fields"]
    assert all(
        extra[c] is not None
        for c in ("alternatives", "consensus", "follow_up", "long_term_outcome")
    )


RATING = (
    b'{"event_id": "e1", "decision_id": "d1", "rating": 4, "scale": "1-5", "rated_by": "user", '
    b'"rated_at": "2025-03-05T10:00:00Z", "reason": "fine"}'
)


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        (RATING, None),
        (RATING.replace(b'"rating": 4', b'"rating": 0.5'), "bad_value"),  # 0.5 is not on 1-5
        (RATING.replace(b'"scale": "1-5"', b'"scale": "1-10"'), "bad_value"),
        (RATING.replace(b'"rated_by": "user"', b'"rated_by": "self"'), "bad_value"),
        (RATING.replace(b'"decision_id": "d1", ', b""), "missing_field"),
        (RATING.replace(b'"rating": 4', b'"rating": "four"'), "bad_type"),
        (RATING[:40], "truncated"),  # a line cut short
    ],
)
def test_a_rating_event_line_is_one_bronze_row_or_one_quarantine_row(tmp_path, line, kind):
    from pipelines.config.settings import Settings
    from pipelines.sources.base import RawFile
    from pipelines.sources.decision import RATINGS_TABLE, parse_file

    file = RawFile("decision", tmp_path / "ratings.jsonl", "ratings/ratings.jsonl")
    result = parse_file(file, line + b"\n", Settings(raw_root=tmp_path, data_root=tmp_path))
    assert result.records_read == 1
    if kind is None:
        (row,) = result.rows[RATINGS_TABLE]
        assert (row["decision_id"], row["rating"], row["scale"], row["reason"]) == (
            "d1",
            4.0,
            "1-5",
            "fine",
        )
        assert not result.quarantine
    else:
        assert [q.error_kind for q in result.quarantine] == [kind]
        assert not result.rows.get(RATINGS_TABLE)
