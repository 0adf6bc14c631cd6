"""The scenario adapter: clean fixtures ingest whole, each dirty record lands in quarantine."""

from __future__ import annotations

import json
import random
from pathlib import Path

import polars as pl
import pytest

from pipelines.config.settings import Limits, Settings
from pipelines.demo import scenario as demo
from pipelines.schemas.bronze.scenario import BRONZE_MODELS
from pipelines.sources import scenario
from pipelines.sources.base import ParseResult, RawFile

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SETTINGS = Settings()
COMPLETED = "scenarios/completed/SCENARIO-2025-001/moderator_dialog.jsonl"
ACTIVE = "scenarios/active/SCENARIO-2025-002/moderator_dialog.jsonl"
ARCHIVED = "scenarios/archived/SCENARIO-2024-007/moderator_dialog.jsonl"
DIRTY_CLOSED = "scenarios/completed/SCENARIO-2025-010/moderator_dialog.jsonl"
DIRTY_PRETTY = "scenarios/archived/SCENARIO-2025-011/moderator_dialog.jsonl"
DIRTY_ACTIVE = "scenarios/active/SCENARIO-2025-012/moderator_dialog.jsonl"


def parse_root(root: Path, settings: Settings = SETTINGS) -> dict[str, ParseResult]:
    return {
        f.rel_path: scenario.parse_file(f, f.path.read_bytes(), settings)
        for f in scenario.discover(root)
    }


def table(results: dict[str, ParseResult], name: str) -> pl.DataFrame:
    return pl.concat([r.tables[name] for r in results.values()])


def quarantined(results: dict[str, ParseResult]) -> set[tuple[str, str, str]]:
    return {(q.file, q.locator, q.error_kind) for r in results.values() for q in r.quarantine}


@pytest.fixture(scope="module")
def clean() -> dict[str, ParseResult]:
    return parse_root(FIXTURES / "clean")


@pytest.fixture(scope="module")
def dirty() -> dict[str, ParseResult]:
    return parse_root(FIXTURES / "dirty")


def entry(results: dict, file: str, index: int) -> dict:
    rows = results[file].tables["scenario_entries"].filter(pl.col("record_index") == index)
    assert rows.height == 1
    return rows.row(0, named=True)


def test_discover_finds_dialog_files_in_every_state_folder_sorted():
    files = [f.rel_path for f in scenario.discover(FIXTURES / "clean")]
    assert files == [ACTIVE, ARCHIVED, COMPLETED]


def test_clean_fixtures_ingest_without_quarantine_and_with_expected_counts(clean):
    assert quarantined(clean) == set()
    counts = {
        f: (
            r.records_read,
            r.tables["scenario_entries"].height,
            r.tables["scenario_metadata"].height,
        )
        for f, r in clean.items()
    }
    assert counts == {COMPLETED: (5, 4, 1), ACTIVE: (4, 4, 0), ARCHIVED: (2, 1, 1)}


def test_clean_bronze_tables_validate_against_their_models(clean):
    for name, model in BRONZE_MODELS.items():
        model.validate(table(clean, name), lazy=True)


def test_documented_entry_maps_typed_outcome_decision_and_keeps_unknown_fields(clean):
    row = entry(clean, COMPLETED, 0)
    assert (row["scenario_id"], row["state"], row["interaction_type"]) == (
        "SCENARIO-2025-001",
        "completed",
        "checkpoint",
    )
    assert row["user_text"].startswith("Actually, our revenue is $900M")
    assert (row["proposed_action"], row["user_decision"]) == ("re-round", "proceed_without_reround")
    assert (row["user_validated"], row["user_satisfaction_score"]) == (True, 0.85)
    assert (row["correction_magnitude"], row["moderator_effectiveness"]) == ("moderate", "good")
    assert row["decision_time_seconds"] == 12.0
    assert row["extra"] == '{"session_tag":"pilot-a"}'
    assert '"prompt_structure"' in row["moderator_fields"]


def test_seed_signals_are_read_from_whichever_block_holds_them(clean):
    first, clarification = entry(clean, COMPLETED, 0), entry(clean, COMPLETED, 3)
    assert (first["synthesis_length_words"], first["checkpoint_number"]) == (342, 1)  # context
    assert first["user_engagement_level"] == "high"  # quality_signals
    assert (first["new_strategic_context"], first["expressed_satisfaction"]) == (
        True,
        False,
    )  # reply signals
    assert clarification["validated_output"] is True  # reply signals


def test_a_signal_found_in_outcome_and_a_numeric_label_are_kept(tmp_path):
    path = tmp_path / "scenarios/completed/SCENARIO-2025-060/moderator_dialog.jsonl"
    path.parent.mkdir(parents=True)
    record = {
        "timestamp": "2025-01-01T00:00:00Z",
        "moderator_message": "Round one.",
        "user_response": "ok",
        "outcome": {"checkpoint_timing": "too_early", "validated_output": False},
        "quality_signals": {"question_quality": 0.75, "engagement_indicators": ["asked_follow_up"]},
    }
    path.write_text(json.dumps(record) + "\n")
    result = scenario.parse_file(
        RawFile.under("scenario", tmp_path, path), path.read_bytes(), SETTINGS
    )
    row = result.tables["scenario_entries"].row(0, named=True)
    assert (row["checkpoint_timing"], row["validated_output"], row["question_quality"]) == (
        "too_early",
        False,
        "0.75",
    )
    assert row["engagement_indicators"] == '["asked_follow_up"]'


def test_a_boolean_where_a_signal_label_belongs_is_quarantined_by_name(tmp_path):
    path = tmp_path / "scenarios/completed/SCENARIO-2025-061/moderator_dialog.jsonl"
    path.parent.mkdir(parents=True)
    record = {
        "timestamp": "2025-01-01T00:00:00Z",
        "moderator_message": "Round one.",
        "quality_signals": {"checkpoint_timing": True},
    }
    path.write_text(json.dumps(record) + "\n")
    result = scenario.parse_file(
        RawFile.under("scenario", tmp_path, path), path.read_bytes(), SETTINGS
    )
    (bad,) = result.quarantine
    assert bad.error_kind == "bad_type" and "quality_signals.checkpoint_timing" in bad.message


def test_plain_string_messages_and_type_spelling_are_accepted(clean):
    row = entry(clean, COMPLETED, 1)
    assert row["interaction_type"] == "validation_request"
    assert row["moderator_text"].startswith("Here's predetermined_elements.md")
    assert row["user_text"] == "Looks good, proceed"
    assert row["user_decision"] == "advance_phase"


def test_hook_user_message_entry_keeps_undocumented_interaction_type(clean):
    row = entry(clean, COMPLETED, 2)
    assert row["interaction_type"] == "user_correction"
    assert row["moderator_text"] is None
    assert row["user_text"].startswith("But the Asian supplier risk")
    assert row["user_response_type"] == "user_correction"


def test_text_cut_inside_a_utf8_character_is_repaired_and_numeric_strings_read(clean):
    row = entry(clean, COMPLETED, 3)
    assert row["moderator_text"].startswith("Noted, re-weighting")
    assert len(row["moderator_text"].encode()) == 998  # the lone lead byte is dropped
    assert (row["round"], row["user_satisfaction_score"]) == (2, 0.9)


def test_bom_does_not_shift_the_first_locator_and_blank_lines_are_skipped(clean):
    locators = clean[COMPLETED].tables["scenario_entries"]["locator"].to_list()
    assert locators[0] == "line 1 (byte 3)"
    assert locators[1].startswith("line 3 ")


def test_metadata_line_with_string_numbers_becomes_one_metadata_row(clean):
    meta = clean[COMPLETED].tables["scenario_metadata"].row(0, named=True)
    assert (meta["completion_time_hours"], meta["user_satisfaction_overall"]) == (4.5, 0.9)
    assert (meta["total_checkpoints"], meta["scenario_successful"]) == (2, True)
    assert meta["interaction_type"] == "scenario_completion"


def test_pretty_printed_active_file_yields_entries_and_a_pending_tail(clean):
    result = clean[ACTIVE]
    assert result.tables["scenario_entries"].height == 4
    assert [p.locator for p in result.pending] == ["line 58 (byte 1584)"]


def test_moderator_response_marks_user_first_and_top_level_content_is_user_text(clean):
    question, fallback = entry(clean, ACTIVE, 1), entry(clean, ACTIVE, 2)
    assert question["user_first"] is True and question["moderator_text"].startswith(
        "Because phase 1"
    )
    assert fallback["user_text"] == "ok, go ahead with the four specialists"
    assert fallback["interaction_type"] == "user_message"


def test_naive_timestamp_is_read_in_the_configured_zone(clean):
    settings = Settings(source_timezones={"scenario": "Europe/Berlin"})
    file = next(f for f in scenario.discover(FIXTURES / "clean") if f.rel_path == ACTIVE)
    result = scenario.parse_file(file, file.path.read_bytes(), settings)
    ts = result.tables["scenario_entries"].filter(pl.col("record_index") == 1)["ts"][0]
    assert ts.isoformat() == "2025-12-02T08:04:00+00:00"


def test_folder_is_the_native_id_when_the_entry_claims_another(clean):
    row = entry(clean, ARCHIVED, 0)
    assert (row["scenario_id"], row["entry_scenario_id"]) == (
        "SCENARIO-2024-007",
        "SCENARIO-2024-07",
    )


EXPECTED_DIRTY = {
    (DIRTY_CLOSED, "line 2 (byte 438)", "invalid_json"),
    (DIRTY_CLOSED, "line 3 (byte 571)", "bad_type"),
    (DIRTY_CLOSED, "line 4 (byte 637)", "missing_field"),
    (DIRTY_CLOSED, "line 5 (byte 786)", "bad_type"),
    (DIRTY_CLOSED, "line 6 (byte 960)", "bad_value"),
    (DIRTY_CLOSED, "line 7 (byte 1136)", "bad_type"),
    (DIRTY_CLOSED, "line 8 (byte 1391)", "bad_value"),
    (DIRTY_CLOSED, "line 9 (byte 1637)", "bad_type"),
    (DIRTY_CLOSED, "line 10 (byte 1869)", "bad_value"),
    (DIRTY_CLOSED, "line 12 (byte 2304)", "truncated"),
    (DIRTY_PRETTY, "line 7 (byte 187)", "bad_type"),
    (DIRTY_PRETTY, "line 14 (byte 346)", "invalid_encoding"),
    (DIRTY_PRETTY, "line 15 (byte 439)", "bad_type"),
    (DIRTY_ACTIVE, "line 2 (byte 174)", "invalid_json"),
}


def test_each_dirty_record_is_quarantined_with_its_expected_kind(dirty):
    assert quarantined(dirty) == EXPECTED_DIRTY


def test_good_records_in_dirty_files_are_kept(dirty):
    kept = {(f, loc) for f, r in dirty.items() for loc in r.tables["scenario_entries"]["locator"]}
    assert kept == {
        (DIRTY_CLOSED, "line 1 (byte 0)"),
        (DIRTY_CLOSED, "line 11 (byte 2048)"),
        (DIRTY_PRETTY, "line 1 (byte 0)"),
        (DIRTY_ACTIVE, "line 1 (byte 0)"),
        (DIRTY_ACTIVE, "line 3 (byte 279)"),
    }


def test_nothing_lost_records_read_equals_bronze_plus_quarantine(dirty, clean):
    for result in [*dirty.values(), *clean.values()]:
        assert result.records_read == result.n_bronze + len(result.quarantine)


def test_only_active_files_may_end_in_a_pending_tail(dirty):
    assert [p.locator for p in dirty[DIRTY_ACTIVE].pending] == ["line 4 (byte 419)"]
    assert dirty[DIRTY_CLOSED].pending == []


def test_quarantine_messages_name_the_field_and_keep_the_raw_record(dirty):
    rows = {q.locator: q for q in dirty[DIRTY_CLOSED].quarantine}
    assert "user_satisfaction_score" in rows["line 7 (byte 1136)"].message
    assert "very satisfied" in rows["line 7 (byte 1136)"].raw


def test_a_file_over_the_size_limit_is_one_quarantined_record(tmp_path):
    path = tmp_path / "scenarios/completed/SCENARIO-2025-050/moderator_dialog.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b'{"timestamp": "2025-01-01T00:00:00Z"}\n' * 10)
    settings = Settings(limits=Limits(max_file_bytes=100))
    result = scenario.parse_file(
        RawFile.under("scenario", tmp_path, path), path.read_bytes(), settings
    )
    assert (result.records_read, result.n_bronze) == (1, 0)
    assert (result.quarantine[0].locator, result.quarantine[0].error_kind) == ("file", "too_large")


def test_demo_writer_is_deterministic_and_only_its_bad_file_quarantines(tmp_path):
    demo.write(tmp_path / "a", random.Random(3))
    demo.write(tmp_path / "b", random.Random(3))
    files_a = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*.jsonl"))
    assert all(
        (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes() for f in files_a
    )
    results = parse_root(tmp_path / "a")
    bad_files = {f for f, r in results.items() if r.quarantine}
    assert bad_files == {"scenarios/archived/SCENARIO-2025-900/moderator_dialog.jsonl"}
    kinds = {q.error_kind for r in results.values() for q in r.quarantine}
    assert kinds == {"invalid_json", "bad_type", "missing_field", "bad_value", "truncated"}
    assert sum(len(r.pending) for r in results.values()) >= 1
    assert table(results, "scenario_metadata").height >= 1
