"""The study's fast paths give exactly what the per-record path gives: the fast session row
(sources/study/fast.py) on every fixture record and on each usual variation, and the Arrow typing
of a study batch (ingest/arrow_typed.py) the same parts as the batch writer."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from pathlib import Path

import orjson
import polars as pl
import pytest

from pipelines.config.settings import Settings
from pipelines.ingest.arrow_typed import ArrowTypedBatch
from pipelines.ingest.batches import QUARANTINE_PART, Batch, part_files
from pipelines.sources import study
from pipelines.sources.base import ParseResult, RecordError
from pipelines.sources.jsonio import split_json_units
from pipelines.sources.study import files
from pipelines.sources.study.fast import session_row_fast
from pipelines.sources.study.records import session_row
from pipelines.storage.layout import Layout

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def fixture_sessions(kind: str) -> list[tuple[str, str, object, str | None]]:
    """(file name, locator, session record, enclosing participant) of every session record that
    parses as JSON in the fixtures of `kind`."""
    out = []
    for file in study.discover(FIXTURES / kind):
        data = file.path.read_bytes()
        name = file.rel_path.rsplit("/", 1)[-1]
        if name.endswith(".jsonl"):
            units = [(u.locator, u.data) for u in split_json_units(data)]
        else:
            units = [("file", data)]
        for locator, text in units:
            try:
                obj = orjson.loads(text)
            except orjson.JSONDecodeError:
                continue
            if "/completed/" in file.rel_path:
                out += [
                    (name, f"conversations[{i}]", c, obj.get("participant_id"))
                    for i, c in enumerate(obj["conversations"])
                ]
            elif "/conversations/" in file.rel_path:
                out.append((name, locator, obj, None))
    return out


def per_record(record: object, tz: str = "UTC", enclosing: str | None = None) -> dict | str:
    try:
        return session_row(record, tz, enclosing)
    except RecordError as err:
        return err.kind


@pytest.mark.parametrize("kind", ["clean", "dirty"])
def test_every_fixture_session_gets_the_per_record_row_or_is_left_to_it(kind: str) -> None:
    fast_ones = []
    for name, locator, record, enclosing in fixture_sessions(kind):
        fast = session_row_fast(record, "UTC", enclosing)
        if fast is not None:
            assert fast == per_record(record, "UTC", enclosing), (name, locator)
            fast_ones.append((name[:8], locator))
    # By hand: the master line and the CCC file session whose turn_count is the string "2" are
    # left to the per-record path, as is every dirty record and CCC002's first conversation
    # (turn_count "2" too).
    expected = {
        "clean": [
            ("CCC001.j", "conversations[1]"),
            ("0f8e3a52", "file"),
            ("all_conv", "line 1 (byte 0)"),
            ("all_conv", "line 3 (byte 2177)"),
        ],
        "dirty": [("all_conv", "line 1 (byte 0)"), ("all_conv", "line 6 (byte 5474)")],
    }
    assert fast_ones == expected[kind]


def parse_all(kind: str) -> dict[str, ParseResult]:
    return {
        f.rel_path: study.parse_file(f, f.path.read_bytes(), Settings())
        for f in study.discover(FIXTURES / kind)
    }


@pytest.mark.parametrize("kind", ["clean", "dirty"])
def test_fast_and_per_record_paths_give_identical_bronze_and_quarantine(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast = parse_all(kind)
    monkeypatch.setattr(files, "session_values", lambda *args: None)
    slow = parse_all(kind)
    assert fast == slow
    sessions = sum(len(r.rows["study_sessions"]) for r in fast.values())
    participants = sum(len(r.rows["study_participants"]) for r in fast.values())
    kinds = sorted(q.error_kind for r in fast.values() for q in r.quarantine)
    if kind == "clean":  # 1 own file + 3 master lines + 2 in CCC001; CCC001 and INC001
        assert (sessions, participants, kinds) == (6, 2, [])
    else:  # tests/fixtures/dirty/survey_responses/DIRTY.md: master lines 1 and 6, CCC002's first
        assert (sessions, participants) == (3, 1)
        assert kinds == sorted(
            ["truncated", "bad_value", "invalid_json", "missing_field", "bad_type"]
            + ["bad_value", "bad_type", "bad_type", "bad_type"]
        )


def usual_session() -> dict:
    return {
        "session_id": "s1",
        "participant_id": "p1",
        "character": "bob",
        "conversation_type": "roleplay",
        "persuasion_strategy": None,
        "turn_count": 1,
        "history": [{"role": "operator", "text": "Leave now."}, {"role": "resident", "text": "No"}],
        "iql_data": [
            {
                "turn": 1,
                "resident_message": "No",
                "operator_response": "Leave now.",
                "selected_policy": "bob",
                "q_values": {"bob": 0.5, "niki": -1.25},
                "judge": {"stance": "refuse", "confidence": 0.9, "reasoning": "Says no."},
                "timestamp": "2026-01-09T07:15:00.500Z",
            }
        ],
        "created_at": "2026-01-09T07:15:00Z",
        "ended_at": None,
    }


def _set(path: tuple, value: object):
    def change(record: dict) -> None:
        *parents, last = path
        for key in parents:
            record = record[key]
        record[last] = value

    return change


LA_0715 = datetime(2026, 1, 9, 15, 15, tzinfo=UTC)  # 07:15 in Los Angeles (UTC-8 in January)


@pytest.mark.parametrize(
    ("change", "fast", "column", "expected"),
    [
        (lambda r: None, True, "judge_stance", "REFUSE"),
        (
            _set(("iql_data", 0, "judge"), {"reason": "Says no."}),
            True,
            "judge_reasoning",
            "Says no.",
        ),
        (
            _set(("created_at",), 1767942900),
            True,
            "created_at",
            datetime(2026, 1, 9, 7, 15, tzinfo=UTC),
        ),
        (_set(("created_at",), "2026-01-09T07:15:00"), True, "created_at", LA_0715),
        (_set(("history",), None), True, "history", []),
        (_set(("participant_id",), ""), True, "participant_id", None),
        (_set(("turn_count",), "1"), False, "turn_count", 1),
        (_set(("iql_data", 0, "judge", "confidence"), 1), False, "judge_confidence", 1.0),
        (_set(("iql_data", 0, "q_values", "bob"), 2), False, "q_value_bob", 2.0),
        (_set(("mood",), "calm"), False, "extra", '{"mood":"calm"}'),
        (_set(("history", 0, "tone"), "calm"), False, "history_extra", '{"tone":"calm"}'),
        (
            _set(("created_at",), "1767942900"),
            True,
            "created_at",
            datetime(2026, 1, 9, 7, 15, tzinfo=UTC),
        ),
        (_set(("iql_data", 0, "turn"), 0), False, "error", "bad_value"),
        (_set(("participant_id",), 5), False, "error", "bad_type"),
        (_set(("history", 0, "role"), "moderator"), False, "error", "bad_value"),
        (_set(("created_at",), "2026-13-09T07:15:00Z"), False, "error", "bad_value"),
        (_set(("created_at",), "1989-12-31T23:00:00Z"), False, "error", "bad_value"),
        (
            lambda r: r["iql_data"].append(copy.deepcopy(r["iql_data"][0])),
            False,
            "error",
            "bad_value",
        ),
    ],
)
def test_each_variation_takes_the_expected_path_and_gets_the_per_record_result(
    change, fast: bool, column: str, expected: object
) -> None:
    record = usual_session()
    change(record)
    tz = "America/Los_Angeles"
    row = session_row_fast(record, tz)
    assert (row is not None) == fast
    result = per_record(record, tz)
    if fast:
        assert row == result
    got = {
        "error": lambda: result,
        "judge_stance": lambda: result["iql"][0]["judge_stance"],
        "judge_reasoning": lambda: result["iql"][0]["judge_reasoning"],
        "judge_confidence": lambda: result["iql"][0]["judge_confidence"],
        "q_value_bob": lambda: result["iql"][0]["q_values"][0]["value"],
        "history_extra": lambda: result["history"][0]["extra"],
    }.get(column, lambda: result[column])()
    assert got == expected


def _write(
    kind: type[Batch], results: dict[str, ParseResult], root: Path
) -> dict[str, pl.DataFrame]:
    batch = kind("study", "run-1")
    for rel_path, result in results.items():
        log_row = {
            "file": rel_path,
            "file_id": "id-" + rel_path,
            "size_bytes": 1,
            "n_bronze": result.n_bronze,
            "n_quarantine": len(result.quarantine),
        }
        batch.add_parsed(log_row, result, b"{}")
    log_rows = batch.write(Layout(root))
    part = log_rows[0]["part_id"]
    files = {
        t: part_files(Layout(root), "study", t, [part])
        for t in ("study_sessions", "study_participants", QUARANTINE_PART)
    }
    return {t: pl.read_parquet(paths) for t, paths in files.items() if paths}


def test_arrow_typed_batch_writes_the_parts_the_batch_writer_writes(tmp_path: Path) -> None:
    results = {
        f"{kind}/{rel}": r for kind in ("clean", "dirty") for rel, r in parse_all(kind).items()
    }
    arrow = _write(ArrowTypedBatch, results, tmp_path / "arrow")
    polars = _write(Batch, results, tmp_path / "polars")
    assert arrow["study_sessions"].height == 9  # 6 clean + 3 dirty sessions, by hand
    for table, frame in polars.items():
        assert arrow[table].equals(frame, null_equal=True), table


def test_a_row_arrow_refuses_is_quarantined_as_the_batch_writer_does(tmp_path: Path) -> None:
    good = session_row(usual_session(), "UTC")
    misfit = {**session_row(usual_session(), "UTC"), "session_id": "s2", "turn_count": 2**64}
    rows = [
        {**r, "file": "f.json", "locator": "file", "copy_kind": "session_file"}
        for r in (good, misfit)
    ]
    result = ParseResult(records_read=2, rows={"study_sessions": rows, "study_participants": []})
    arrow = _write(ArrowTypedBatch, {"f.json": result}, tmp_path / "arrow")
    polars = _write(Batch, {"f.json": copy.deepcopy(result)}, tmp_path / "polars")
    assert arrow["study_sessions"]["session_id"].to_list() == ["s1"]
    assert arrow[QUARANTINE_PART]["error_kind"].to_list() == ["bad_value"]  # past Int64
    for table, frame in polars.items():
        assert arrow[table].equals(frame, null_equal=True), table


def test_a_value_polars_casts_but_arrow_refuses_is_typed_as_the_batch_writer_does(
    tmp_path: Path,
) -> None:
    row = {**session_row(usual_session(), "UTC"), "character": 5}  # an int in a String column
    row.update(file="f.json", locator="file", copy_kind="session_file")
    result = ParseResult(records_read=1, rows={"study_sessions": [row], "study_participants": []})
    arrow = _write(ArrowTypedBatch, {"f.json": result}, tmp_path / "arrow")
    polars = _write(Batch, {"f.json": copy.deepcopy(result)}, tmp_path / "polars")
    assert arrow["study_sessions"]["character"].to_list() == ["5"]  # Polars' cast, kept
    for table, frame in polars.items():
        assert arrow[table].equals(frame, null_equal=True), table
