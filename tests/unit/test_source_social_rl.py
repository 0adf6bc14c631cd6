"""social_rl adapter: clean fixtures ingest whole, dirty ones quarantine one row per bad file."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest

from pipelines.config.settings import Settings
from pipelines.schemas.bronze.social_rl import BRONZE_MODELS
from pipelines.sources import social_rl

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
REAL_SAMPLES = (
    Path(__file__).resolve().parents[2].parent
    / "shared"
    / "real_samples"
    / "social_rl"
    / "Socratic-RCM"
)
SETTINGS = Settings()


def parse_all(root: Path) -> dict:
    results = {
        f.rel_path: social_rl.parse_file(f, f.path.read_bytes(), SETTINGS)
        for f in social_rl.discover(root)
    }
    for result in results.values():
        for table, frame in result.tables.items():
            BRONZE_MODELS[table].validate(frame, lazy=True)
    return results


def rows(results: dict, table: str) -> list[dict]:
    return [
        row
        for r in results.values()
        if table in r.tables
        for row in r.tables[table].iter_rows(named=True)
    ]


@pytest.fixture(scope="module")
def clean() -> dict:
    return parse_all(FIXTURES / "clean")


@pytest.fixture(scope="module")
def dirty() -> dict:
    return parse_all(FIXTURES / "dirty")


def test_discover_finds_only_social_rl_files_sorted():
    files = social_rl.discover(FIXTURES / "clean")
    paths = [f.rel_path for f in files]
    assert paths == sorted(paths)
    assert len(paths) == 9  # 5 rounds, 2 meta, 1 metrics, 1 PRAR state
    assert all(p.startswith(("outputs/", "prar/outputs/")) for p in paths)


def test_clean_fixtures_ingest_without_quarantine(clean):
    assert [q for r in clean.values() for q in r.quarantine] == []
    assert all(r.records_read == r.n_bronze == 1 for r in clean.values())
    assert len(rows(clean, "social_rl_rounds")) == 5
    assert len(rows(clean, "social_rl_meta")) == 2


def test_round_file_keeps_unicode_float_noise_and_empty_synthesis(clean):
    row = next(
        r
        for r in rows(clean, "social_rl_rounds")
        if r["run_dir"] == "social_rl_2025-11-23_180822" and r["round_number"] == 1
    )
    assert row["synthesis"] == ""
    assert "it\u2019s" in row["messages"][0]["content"]
    assert row["messages"][0]["ts"] == datetime.fromtimestamp(1763939318.854392, UTC)
    assert row["feedback"][0]["contribution_value"] == 0.19999999999999998
    assert orjson.loads(row["messages"][0]["extra"]) == {"feedback_snapshot": None}


def test_both_adaptation_shapes_are_normalised(clean):
    by_run = {r["run_dir"] + str(r["round_number"]): r for r in rows(clean, "social_rl_rounds")}
    real = by_run["social_rl_2025-11-23_1808222"]["policy_adaptations"][0]
    assert (real["agent_id"], real["role"], real["round_number"]) == ("Owner+Marta", "Owner", 2)
    assert real["alignment_delta"] == -0.35 and real["adaptation_type"] is None
    documented = by_run["ces_urban_run1"]["policy_adaptations"][0]
    assert (documented["adaptation_type"], documented["cue"]) == (
        "activate_cue",
        "emphasize_non_domination",
    )
    assert orjson.loads(documented["feedback_trigger"]) == {"engagement": 0.7, "alignment": 0.4}


def test_inline_meta_and_internal_coach_message_are_kept(clean):
    row = next(r for r in rows(clean, "social_rl_rounds") if r["run_dir"] == "ces_urban_run")
    assert orjson.loads(row["meta"])["experiment_id"] == "ces_pilot"
    coach = row["messages"][1]
    assert (coach["agent_id"], coach["internal"], coach["message_role"]) == (
        "Coach",
        True,
        "system",
    )
    assert [m["internal"] for m in row["messages"]] == [False, True, False]
    assert orjson.loads(row["round_config"])["tasks"] == "Agree on a priority"


def test_meta_without_version_leaves_it_null(clean):
    versions = {r["run_dir"]: r["social_rl_version"] for r in rows(clean, "social_rl_meta")}
    assert versions == {"social_rl_2025-11-20_101500": None, "social_rl_2025-11-23_180822": "0.2.0"}


EXPECTED_DIRTY = {
    "outputs/run_bad/round1_social_rl.json": ("file", "invalid_json"),
    "outputs/run_bad/round2_social_rl.json": ("file", "truncated"),
    "outputs/run_bad/round3_social_rl.json": ("feedback", "bad_type"),
    "outputs/run_bad/round4_social_rl.json": ("round_number", "bad_type"),
    "outputs/run_bad/round5_social_rl.json": ("messages", "missing_field"),
    "outputs/run_bad/round6_social_rl.json": ("messages[1]", "missing_field"),
    "outputs/run_bad/round7_social_rl.json": ("feedback['Worker+Alice']", "bad_value"),
    "outputs/run_bad/round8_social_rl.json": ("round_number", "bad_value"),
    "outputs/run_bad/meta.json": ("experiment_id", "bad_type"),
    "outputs/run_bad/metrics.json": ("file", "truncated"),
    "prar/outputs/broken_run/state.json": ("file", "bad_type"),
}


def test_each_dirty_file_is_quarantined_with_its_kind(dirty):
    got = {
        path: [(q.locator, q.error_kind) for q in r.quarantine]
        for path, r in dirty.items()
        if r.quarantine
    }
    assert got == {path: [expected] for path, expected in EXPECTED_DIRTY.items()}


def test_dirty_good_round_is_kept_and_nothing_is_lost(dirty):
    assert dirty["outputs/run_good/round1_social_rl.json"].n_bronze == 1
    assert all(r.records_read == r.n_bronze + len(r.quarantine) for r in dirty.values())


def test_unparseable_bytes_do_not_raise():
    file = social_rl.discover(FIXTURES / "clean")[0]
    result = social_rl.parse_file(file, b"\xff\xfe not json", SETTINGS)
    assert result.records_read == 1 and result.n_bronze == 0
    assert result.quarantine[0].error_kind in {"invalid_encoding", "invalid_json"}


def test_real_samples_ingest_with_nothing_lost():
    if not REAL_SAMPLES.is_dir():
        pytest.skip("real samples not available")
    results = parse_all(REAL_SAMPLES)
    assert [q for r in results.values() for q in r.quarantine] == []
    rounds = rows(results, "social_rl_rounds")
    assert sorted(r["round_number"] for r in rounds) == [1, 2]
    assert sum(len(r["messages"]) for r in rounds) == 18
    assert sum(len(r["feedback"]) for r in rounds) == 6
    assert len(rows(results, "social_rl_prar_states")) == 1


def test_demo_writer_output_is_deterministic_and_quarantines_only_its_bad_files(tmp_path):
    import random

    from pipelines.demo import social_rl as demo

    demo.write(tmp_path / "a", random.Random(3), scale=1)
    demo.write(tmp_path / "b", random.Random(3), scale=1)
    files_a = sorted(
        p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file()
    )
    assert files_a == sorted(
        p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*") if p.is_file()
    )
    assert all(
        (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes() for f in files_a
    )
    results = parse_all(tmp_path / "a")
    kinds = sorted(q.error_kind for r in results.values() for q in r.quarantine)
    assert kinds == [
        "bad_type",
        "bad_type",
        "bad_value",
        "invalid_json",
        "missing_field",
        "truncated",
    ]
    assert all(
        q.file.startswith("outputs/broken_run_") for r in results.values() for q in r.quarantine
    )
    assert len(rows(results, "social_rl_rounds")) >= 12
