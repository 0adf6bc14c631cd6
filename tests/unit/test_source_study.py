"""The study adapter: clean fixtures ingest whole, dirty records are quarantined one by one."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import orjson
import polars as pl
import pytest

from pipelines.config.settings import Settings
from pipelines.schemas.bronze.study import BRONZE_MODELS
from pipelines.sources import study
from pipelines.sources.base import RawFile

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
P1 = "0f8e3a52-6c1d-4b7e-9a20-3d5b8c7e1f44"
P2 = "7a1c9e0b-2d4f-4c8a-b6e1-5f3a9d2c8b10"
NIKI = f"{P1}_niki_1767943131"
NONROLE = f"{P1}_nonrole_social-normative_1767942900"
REFUSAL = f"{P2}_bob_1766546860"


def ingest(root: Path) -> dict:
    results = {
        f.rel_path: study.parse_file(f, f.path.read_bytes(), Settings())
        for f in study.discover(root)
    }
    tables = {name: pl.concat([r.tables[name] for r in results.values()]) for name in BRONZE_MODELS}
    quarantine = [q for r in results.values() for q in r.quarantine]
    return {"results": results, "tables": tables, "quarantine": quarantine}


@pytest.fixture(scope="module")
def clean() -> dict:
    return ingest(FIXTURES / "clean")


@pytest.fixture(scope="module")
def dirty() -> dict:
    return ingest(FIXTURES / "dirty")


def test_discover_ignores_backend_logs_exports_and_docs(tmp_path: Path) -> None:
    for rel in (
        "survey_responses/conversations/b.json",
        "survey_responses/conversations/all_conversations.jsonl",
        "survey_responses/completed/CCC001.json",
        "survey_responses/exits/INC001.json",
        "survey_responses/DIRTY.md",
        "backend/q_values_log.jsonl",
        "conversation_data_exports/conversations_20260108.json",
    ):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("{}")
    assert [f.rel_path for f in study.discover(tmp_path)] == [
        "survey_responses/completed/CCC001.json",
        "survey_responses/conversations/all_conversations.jsonl",
        "survey_responses/conversations/b.json",
        "survey_responses/exits/INC001.json",
    ]


def test_clean_fixture_has_no_quarantine_and_expected_counts(clean: dict) -> None:
    assert clean["quarantine"] == []
    assert (
        clean["tables"]["study_sessions"].height == 6
    )  # 1 own file + 3 master lines + 2 in CCC001
    assert clean["tables"]["study_participants"].height == 2
    for result in clean["results"].values():
        assert result.records_read == result.n_bronze + len(result.quarantine)


def test_clean_bronze_frames_validate_against_bronze_models(clean: dict) -> None:
    for name, model in BRONZE_MODELS.items():
        model.validate(clean["tables"][name], lazy=True)


def test_participant_id_is_taken_from_record_camel_case_or_enclosing_file(clean: dict) -> None:
    rows = clean["tables"]["study_sessions"].select(
        "copy_kind", "session_id", "participant_id", "participant_id_from"
    )
    origins = {(r["copy_kind"], r["session_id"]): r["participant_id_from"] for r in rows.to_dicts()}
    assert origins[("session_file", NIKI)] == "record"
    assert origins[("master", NONROLE)] == "participantId"
    assert origins[("completed", NIKI)] == "enclosing_file"
    assert rows["participant_id"].null_count() == 0


def test_timestamps_naive_z_and_epoch_are_all_read_as_utc(clean: dict) -> None:
    by_id = {
        r["session_id"]: r
        for r in clean["tables"]["study_sessions"]
        .filter(pl.col("copy_kind") == "master")
        .to_dicts()
    }
    assert by_id[NIKI]["created_at"] == datetime(2026, 1, 9, 7, 18, 51, 741486, tzinfo=UTC)
    assert by_id[NONROLE]["created_at"] == datetime(2026, 1, 9, 7, 15, tzinfo=UTC)
    assert by_id[REFUSAL]["created_at"] == datetime(2025, 12, 24, 3, 27, 40, 100000, tzinfo=UTC)
    assert by_id[REFUSAL]["iql"][0]["ts"] == datetime(2025, 12, 24, 3, 27, 50, 250000, tzinfo=UTC)


def test_judge_reason_or_reasoning_and_extra_stances_are_kept(clean: dict) -> None:
    rows = clean["tables"]["study_sessions"].filter(pl.col("copy_kind") == "session_file")
    steps = rows["iql"][0]
    assert [s["judge_stance"] for s in steps] == ["UNKNOWN", "AGREE"]
    assert steps[0]["judge_reasoning"].startswith("The resident's response")  # came from `reason`
    refusal = clean["tables"]["study_sessions"].filter(pl.col("session_id") == REFUSAL)["iql"][0]
    assert [s["judge_stance"] for s in refusal] == ["DELAY", "REFUSE", "REFUSE"]
    assert refusal[1]["judge_reasoning"] == "Refuses to evacuate."  # came from `reasoning`


def test_q_values_become_policy_value_pairs_and_string_numbers_are_read(clean: dict) -> None:
    row = (
        clean["tables"]["study_sessions"]
        .filter(pl.col("copy_kind") == "session_file")
        .row(0, named=True)
    )
    assert {q["policy"]: q["value"] for q in row["iql"][1]["q_values"]}["michelle"] == 1.1
    nonrole = (
        clean["tables"]["study_sessions"]
        .filter((pl.col("session_id") == NONROLE) & (pl.col("copy_kind") == "master"))
        .row(0, named=True)
    )
    assert nonrole["turn_count"] == 2  # stored as the string "2"
    assert nonrole["iql"] == []


def test_participant_files_keep_survey_in_bronze_and_allow_no_conversations(clean: dict) -> None:
    people = {r["confirmation_number"]: r for r in clean["tables"]["study_participants"].to_dicts()}
    assert people["CCC001"]["n_conversations"] == 2  # fewer than six is fine
    assert people["INC001"]["n_conversations"] == 0
    assert people["INC001"]["exit_page"] == "unknown"
    assert orjson.loads(people["CCC001"]["survey"])["background"]["nickname"] == "Mavis"
    assert len(orjson.loads(people["CCC001"]["post_surveys"])) == 2


DIRTY_EXPECTED = [
    (f"survey_responses/conversations/{REFUSAL}.json", "file", "truncated"),
    (f"survey_responses/conversations/{NONROLE}.json", "file", "bad_value"),
    (
        "survey_responses/conversations/all_conversations.jsonl",
        "line 2 (byte 2230)",
        "invalid_json",
    ),
    (
        "survey_responses/conversations/all_conversations.jsonl",
        "line 3 (byte 2310)",
        "missing_field",
    ),
    ("survey_responses/conversations/all_conversations.jsonl", "line 4 (byte 3079)", "bad_type"),
    ("survey_responses/conversations/all_conversations.jsonl", "line 5 (byte 4970)", "bad_value"),
    ("survey_responses/completed/CCC002.json", "conversations[1]", "bad_type"),
    ("survey_responses/completed/CCC002.json", "conversations[2]", "bad_type"),
    ("survey_responses/exits/INC002.json", "file", "bad_type"),
]


@pytest.mark.parametrize(("file", "locator", "kind"), DIRTY_EXPECTED)
def test_dirty_record_is_quarantined_with_expected_kind(
    dirty: dict, file: str, locator: str, kind: str
) -> None:
    found = [
        (q.error_kind, q.message)
        for q in dirty["quarantine"]
        if (q.file, q.locator) == (file, locator)
    ]
    assert len(found) == 1 and found[0][0] == kind, found
    assert found[0][1]


def test_dirty_fixture_quarantines_nothing_else_and_keeps_good_records(dirty: dict) -> None:
    assert len(dirty["quarantine"]) == len(DIRTY_EXPECTED)
    sessions = dirty["tables"]["study_sessions"]
    assert sorted(sessions.select("file", "locator").rows()) == [
        ("survey_responses/completed/CCC002.json", "conversations[0]"),
        ("survey_responses/conversations/all_conversations.jsonl", "line 1 (byte 0)"),
        ("survey_responses/conversations/all_conversations.jsonl", "line 6 (byte 5474)"),
    ]
    assert dirty["tables"]["study_participants"]["confirmation_number"].to_list() == ["CCC002"]


def test_dirty_records_read_equals_bronze_plus_quarantine_per_file(dirty: dict) -> None:
    for result in dirty["results"].values():
        assert result.records_read == result.n_bronze + len(result.quarantine)
    assert sum(r.records_read for r in dirty["results"].values()) == 13


def test_empty_session_file_is_one_truncated_record(tmp_path: Path) -> None:
    path = tmp_path / "survey_responses" / "conversations" / "x.json"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"")
    result = study.parse_file(RawFile.under("study", tmp_path, path), b"", Settings())
    assert result.records_read == 1 and result.n_bronze == 0
    assert [(q.locator, q.error_kind) for q in result.quarantine] == [("file", "truncated")]


def test_copy_kind_follows_the_folder() -> None:
    assert study.copy_kind("survey_responses/conversations/a.json") == "session_file"
    assert study.copy_kind("survey_responses/conversations/all_conversations.jsonl") == "master"
    assert study.copy_kind("survey_responses/completed/CCC001.json") == "completed"
    assert study.copy_kind("survey_responses/exits/INC001.json") == "exit"


def test_demo_writer_is_deterministic_and_its_bad_records_are_quarantined(tmp_path: Path) -> None:
    import random

    from pipelines.demo import study as demo

    demo.write(tmp_path / "a", random.Random(3))
    demo.write(tmp_path / "b", random.Random(3))
    files_a = sorted(
        p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file()
    )
    assert files_a == sorted(
        p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*") if p.is_file()
    )
    assert all(
        (tmp_path / "a" / p).read_bytes() == (tmp_path / "b" / p).read_bytes() for p in files_a
    )
    demo_run = ingest(tmp_path / "a")
    kinds = sorted(q.error_kind for q in demo_run["quarantine"])
    assert kinds == [
        "bad_type",
        "bad_type",
        "bad_value",
        "invalid_json",
        "missing_field",
        "truncated",
    ]
    copy_kinds = set(demo_run["tables"]["study_sessions"]["copy_kind"])
    assert copy_kinds == {"session_file", "master", "completed", "exit"}


MASTER = "survey_responses/conversations/all_conversations.jsonl"


def test_a_master_file_turns_each_record_into_its_row_before_parsing_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pipelines.sources import jsonio
    from pipelines.sources.study import files

    lines = [orjson.dumps({"session_id": f"s{i}", "history": []}) for i in range(3)]
    path = tmp_path / MASTER
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\n".join(lines) + b"\n")
    parsed, built = [], []
    real_loads, real_session = jsonio.loads_record, files.session

    def loads_record(data: bytes, **limits: int) -> object:
        parsed.append(data)
        return real_loads(data, **limits)

    def session(record: object, tz: str, enclosing: str | None = None) -> dict:
        assert len(parsed) == len(built) + 1  # this record parsed, the next one not yet
        built.append(record)
        return real_session(record, tz, enclosing)

    monkeypatch.setattr(jsonio, "loads_record", loads_record)
    monkeypatch.setattr(files, "session", session)
    result = study.parse_file(RawFile("study", path, MASTER), path.read_bytes(), Settings())
    assert [r["session_id"] for r in result.rows["study_sessions"]] == ["s0", "s1", "s2"]


def test_a_master_file_lists_its_lines_that_are_not_json_before_its_bad_records(
    tmp_path: Path,
) -> None:
    good = b'{"session_id": "s1"}'
    no_id = b'{"history": []}'  # a record without session_id: missing_field
    lines = [good, no_id, b"{nope", good.replace(b"s1", b"s2")]
    path = tmp_path / MASTER
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\n".join(lines) + b"\n")
    result = study.parse_file(RawFile("study", path, MASTER), path.read_bytes(), Settings())
    # byte offsets: line 2 starts after 20 + 1 bytes, line 3 after 21 + 15 + 1
    assert [(q.error_kind, q.locator) for q in result.quarantine] == [
        ("invalid_json", "line 3 (byte 37)"),
        ("missing_field", "line 2 (byte 21)"),
    ]
    assert result.records_read == 4
    assert [r["session_id"] for r in result.rows["study_sessions"]] == ["s1", "s2"]
