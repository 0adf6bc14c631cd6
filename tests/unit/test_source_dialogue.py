"""The dialogue adapter: clean fixtures ingest whole, each dirty record lands in quarantine."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from pipelines.config.settings import Limits, Settings
from pipelines.schemas.bronze.dialogue import BRONZE_MODELS
from pipelines.sources import dialogue
from pipelines.sources.base import RawFile

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SETTINGS = Settings(dialogue_turn_index_base={"tutoring": 1})


def parse_root(root: Path, settings: Settings = SETTINGS) -> dict[str, dict]:
    results = {}
    for file in dialogue.discover(root):
        results[file.rel_path] = dialogue.parse_file(file, file.path.read_bytes(), settings)
    return results


def bronze_table(results: dict, table: str) -> pl.DataFrame:
    return pl.concat([r.tables[table] for r in results.values() if table in r.tables])


def quarantined(results: dict) -> set[tuple[str, str, str]]:
    return {(q.file, q.locator, q.error_kind) for r in results.values() for q in r.quarantine}


@pytest.fixture(scope="module")
def clean() -> dict:
    return parse_root(FIXTURES / "clean")


@pytest.fixture(scope="module")
def dirty() -> dict:
    return parse_root(FIXTURES / "dirty")


def test_discover_finds_only_dialogue_and_feedback_jsonl_sorted():
    rel_paths = [f.rel_path for f in dialogue.discover(FIXTURES / "clean")]
    assert rel_paths == sorted(rel_paths)
    assert rel_paths == [
        "dialogues/legacy.jsonl",
        "dialogues/support/2024-05-01.jsonl",
        "dialogues/support/2024-05-02.jsonl",
        "dialogues/tutoring/session-01.jsonl",
        "feedback/default.jsonl",
        "feedback/support/2024-05-01.jsonl",
        "feedback/tutoring/events.jsonl",
    ]


def test_dataset_is_first_folder_or_default():
    assert dialogue.dataset_of("dialogues/support/2024/05/a.jsonl") == "support"
    assert dialogue.dataset_of("feedback/a.jsonl") == "default"


def test_clean_fixture_has_no_quarantine_and_counts_every_record(clean):
    assert quarantined(clean) == set()
    assert bronze_table(clean, "dialogue_conversations").height == 8
    assert bronze_table(clean, "dialogue_feedback_events").height == 9
    for result in clean.values():
        assert result.records_read == result.n_bronze


def test_clean_bronze_frames_satisfy_their_models(clean):
    for table, model in BRONZE_MODELS.items():
        model.validate(bronze_table(clean, table), lazy=True)


def test_harmless_variations_are_accepted_with_values(clean):
    conversations = bronze_table(clean, "dialogue_conversations")
    legacy = conversations.filter(pl.col("dataset") == "default").row(0, named=True)
    assert legacy["conversation_id"] == "42"  # integer id, file with a BOM
    assert legacy["quality"] is None and legacy["quality_raw"] == '"good"'
    assert legacy["turns"][0]["extra"] == '{"lang":"en"}'
    c102 = conversations.filter(pl.col("conversation_id") == "c-102").row(0, named=True)
    assert c102["quality"] == 0.7  # numeric string
    assert c102["extra"] == '{"channel":"web"}'
    assert c102["tags"] is None
    assert [t["ts"].isoformat() for t in c102["turns"]] == [
        "2024-05-01T20:15:00+00:00",  # naive, read as UTC
        "2024-05-01T20:15:30+00:00",  # epoch seconds
    ]
    assert c102["locator"] == "line 4 (byte 731)"  # blank line before it is skipped, not a record


def test_feedback_event_fields_are_typed_and_extras_kept(clean):
    events = bronze_table(clean, "dialogue_feedback_events")
    ev2 = events.filter(pl.col("event_id") == "ev-2").row(0, named=True)
    assert (ev2["turn_index"], ev2["rating"], ev2["reward"]) == (3, 1.0, 0.6)
    assert ev2["comment"] == "Channel change fixed it!"
    assert ev2["extra"] == '{"user_id":"u-77"}'
    episode_level = events.filter(pl.col("turn_index").is_null()).row(0, named=True)
    assert episode_level["observed_at"].isoformat() == "2024-05-01T21:46:40+00:00"  # `timestamp`
    assert events.filter(pl.col("event_id") == "tu-10")["rating"].to_list() == [1.0]


def test_duplicate_deliveries_share_an_event_key(clean):
    events = bronze_table(clean, "dialogue_feedback_events")
    by_id = events.filter(pl.col("event_id") == "ev-1")["event_key"]
    assert by_id.n_unique() == 1 and by_id.len() == 2
    no_id = events.filter(pl.col("event_id").is_null() & (pl.col("conversation_id") == "c-101"))
    assert no_id.filter(pl.col("turn_index") == 2)["event_key"].n_unique() == 1


DIRTY_PARSE = {
    ("dialogues/support/bad.jsonl", "line 2 (byte 163)", "invalid_json"),
    ("dialogues/support/bad.jsonl", "line 3 (byte 231)", "missing_field"),
    ("dialogues/support/bad.jsonl", "line 4 (byte 285)", "bad_type"),
    ("dialogues/support/bad.jsonl", "line 5 (byte 333)", "missing_field"),
    ("dialogues/support/bad.jsonl", "line 6 (byte 411)", "bad_type"),
    ("dialogues/support/bad.jsonl", "line 7 (byte 497)", "bad_value"),
    ("dialogues/support/bad.jsonl", "line 8 (byte 570)", "bad_type"),
    ("dialogues/support/bad.jsonl", "line 9 (byte 578)", "truncated"),
    ("feedback/support/bad-events.jsonl", "line 2 (byte 69)", "bad_type"),
    ("feedback/support/bad-events.jsonl", "line 3 (byte 140)", "bad_type"),
    ("feedback/support/bad-events.jsonl", "line 4 (byte 211)", "missing_field"),
    ("feedback/support/bad-events.jsonl", "line 5 (byte 257)", "missing_field"),
    ("feedback/support/bad-events.jsonl", "line 6 (byte 315)", "bad_type"),
    ("feedback/support/bad-events.jsonl", "line 7 (byte 389)", "bad_value"),
    ("feedback/support/bad-events.jsonl", "line 8 (byte 494)", "invalid_json"),
}


def test_each_dirty_record_is_quarantined_with_its_kind(dirty):
    assert quarantined(dirty) == DIRTY_PARSE


def test_dirty_good_records_are_kept(dirty):
    conversations = bronze_table(dirty, "dialogue_conversations")
    assert sorted(conversations["file"].to_list()) == [
        "dialogues/support/a-early.jsonl",
        "dialogues/support/bad.jsonl",
    ]
    events = bronze_table(dirty, "dialogue_feedback_events")
    assert events.height == 8
    assert events.filter(pl.col("event_id") == "e-12")["rating_raw"].to_list() == ['"thumbs_up"']


def test_dirty_nothing_lost_per_file(dirty):
    for result in dirty.values():
        assert result.records_read == result.n_bronze + len(result.quarantine)
    assert dirty["dialogues/support/bad.jsonl"].records_read == 9


def test_quarantine_messages_name_the_broken_rule(dirty):
    messages = {q.locator: q.message for q in dirty["dialogues/support/bad.jsonl"].quarantine}
    assert "turns[0]" in messages["line 5 (byte 333)"] and "'role'" in messages["line 5 (byte 333)"]
    assert "file ends inside a record" in messages["line 9 (byte 578)"]


def test_oversized_file_is_one_quarantined_record(tmp_path):
    path = tmp_path / "dialogues" / "big.jsonl"
    path.parent.mkdir()
    path.write_bytes(b'{"conversation_id":"x","turns":[]}\n' * 10)
    settings = Settings(limits=Limits(max_file_bytes=100))
    result = dialogue.parse_file(
        RawFile.under("dialogue", tmp_path, path), path.read_bytes(), settings
    )
    assert result.records_read == 1 and result.n_bronze == 0
    assert [(q.locator, q.error_kind) for q in result.quarantine] == [("file", "too_large")]


def test_demo_output_ingests_with_every_bad_kind_and_nothing_lost(tmp_path):
    import random

    from pipelines.demo import dialogue as demo
    from pipelines.transforms.dialogue import to_silver

    demo.write(tmp_path, random.Random(3))
    settings = Settings(dialogue_turn_index_base=demo.TURN_INDEX_BASE)
    results = parse_root(tmp_path, settings)
    assert {"support", "tutoring", "default"} == {dialogue.dataset_of(p) for p in results}
    for result in results.values():
        assert result.records_read == result.n_bronze + len(result.quarantine)
    parse_kinds = {kind for _, _, kind in quarantined(results)}
    assert {"invalid_json", "truncated", "missing_field", "bad_type", "bad_value"} <= parse_kinds
    bronze = {t: bronze_table(results, t).lazy() for t in BRONZE_MODELS}
    silver_kinds = set(to_silver(bronze, settings)["quarantine"].collect()["error_kind"])
    assert silver_kinds == {"orphan", "bad_value", "duplicate_conflict"}
