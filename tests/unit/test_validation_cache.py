"""The validation ledger: passes are remembered by digest, failures never, and it can be
bypassed."""

import os

import pytest

from pipelines.checks.ledger import (
    REVALIDATE_ENV,
    Verdict,
    cached_verdict,
    content_lines,
    ledger_entry,
    recall,
    record,
    revalidation,
    stat_lines,
)

PASS = Verdict(True, {"rows": 3})
FAIL = Verdict(False, {"rows": 3, "failures": 1})


@pytest.fixture(autouse=True)
def _no_forced_revalidation(monkeypatch):
    monkeypatch.delenv(REVALIDATE_ENV, raising=False)


def test_a_recorded_pass_is_recalled_for_the_same_digest_with_its_run(tmp_path):
    record(tmp_path, "silver_turns:turns_matches_contract", "d1", "run-1", PASS)
    reused = recall(tmp_path, "silver_turns:turns_matches_contract", "d1")
    assert reused == Verdict(True, {"rows": 3, "reused": True, "validated_in_run": "run-1"})


def test_a_different_digest_is_not_recalled(tmp_path):
    record(tmp_path, "c", "d1", "run-1", PASS)
    assert recall(tmp_path, "c", "d2") is None


def test_a_failure_is_never_recorded_and_drops_an_earlier_pass(tmp_path):
    record(tmp_path, "c", "d1", "run-1", FAIL)
    assert not ledger_entry(tmp_path, "c").exists()
    record(tmp_path, "c", "d1", "run-1", PASS)
    record(tmp_path, "c", "d1", "run-2", FAIL)
    assert recall(tmp_path, "c", "d1") is None


def test_a_corrupted_entry_counts_as_not_validated(tmp_path):
    record(tmp_path, "c", "d1", "run-1", PASS)
    ledger_entry(tmp_path, "c").write_text('{"digest": "d1", "run_id"')
    assert recall(tmp_path, "c", "d1") is None


def test_ledger_lives_under_the_data_roots_turnlake_folder_without_temp_files(tmp_path):
    record(tmp_path, "bronze_study:nothing_lost", "d1", "run-1", PASS)
    folder = tmp_path / ".turnlake" / "validated"
    assert [p.name for p in folder.iterdir()] == ["bronze_study.nothing_lost.json"]


def test_cached_verdict_judges_only_when_there_is_no_matching_pass(tmp_path):
    calls = []

    def judge():
        calls.append(1)
        return PASS

    first = cached_verdict(tmp_path, "c", "d1", "run-1", judge)
    second = cached_verdict(tmp_path, "c", "d1", "run-2", judge)
    third = cached_verdict(tmp_path, "c", "d2", "run-3", judge)
    assert len(calls) == 2
    assert first == PASS and third == PASS
    assert second.metadata["reused"] is True and second.metadata["validated_in_run"] == "run-1"


def test_cached_verdict_rejudges_a_failure_every_time(tmp_path):
    calls = []

    def judge():
        calls.append(1)
        return FAIL

    for run in ("run-1", "run-2"):
        assert cached_verdict(tmp_path, "c", "d1", run, judge) == FAIL
    assert len(calls) == 2


def test_forced_revalidation_judges_again_and_is_undone_after_the_block(tmp_path):
    calls = []

    def judge():
        calls.append(1)
        return PASS

    cached_verdict(tmp_path, "c", "d1", "run-1", judge)
    with revalidation(True):
        assert os.environ[REVALIDATE_ENV] == "1"
        assert cached_verdict(tmp_path, "c", "d1", "run-2", judge) == PASS
    assert REVALIDATE_ENV not in os.environ
    assert len(calls) == 2


def test_stat_lines_follow_the_generation_a_link_points_to(tmp_path):
    (tmp_path / "silver.a").mkdir()
    (tmp_path / "silver.b").mkdir()
    for gen in ("a", "b"):
        (tmp_path / f"silver.{gen}" / "turns.parquet").write_bytes(b"same bytes")
    link = tmp_path / "silver"
    link.symlink_to("silver.a")
    before = stat_lines([link / "turns.parquet"], tmp_path)
    link.unlink()
    link.symlink_to("silver.b")
    assert stat_lines([link / "turns.parquet"], tmp_path) != before
    assert before[0].startswith(
        "silver.a/turns.parquet|"
    )  # relative: a copied data root still matches


def test_content_lines_change_with_the_bytes_only(tmp_path):
    path = tmp_path / "turn_rewards.parquet"
    path.write_bytes(b"v1")
    first = content_lines([path])
    path.write_bytes(b"v1")
    assert content_lines([path]) == first
    path.write_bytes(b"v2")
    assert content_lines([path]) != first
