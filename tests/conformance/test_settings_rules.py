"""Settings rules (issue 13, items 8 and 13): every table of turnlake.toml and rewards.toml takes
effect in the real pipeline, and an input with nothing recognisable builds empty tables, no
release, and lists the files no adapter reads.

Expected values are computed by hand here: split buckets with hashlib (DESIGN §4: first 8 bytes
of sha256(salt NUL group_id), big-endian, mod 10 000), times with the zone's offset written out.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest

from pipelines.checks import verdicts as check_verdicts
from pipelines.config.settings import SettingsError
from pipelines.ingest.claimed import unrecognised_files
from pipelines.ingest.log import current_parts
from pipelines.reports.status import raw_status
from pipelines.reports.summary import build_summary, unrecognised_lines
from pipelines.storage.layout import Layout
from tests.conformance.harness import run_pipeline, write_jsonl

GROUP = "dialogue:tutoring/c-1"


def conversation(
    raw: Path,
    cid: str,
    created_at: str = "2025-01-15T10:00:00",
    dataset: str = "tutoring",
    question: str | None = None,
) -> None:
    turns = [
        {"role": "user", "content": question or f"Why is the sky blue, asks {cid}?"},
        {"role": "assistant", "content": f"Rayleigh scattering of sunlight, answered for {cid}."},
    ]
    write_jsonl(
        raw / "dialogues" / dataset / f"{cid}.jsonl",
        [{"conversation_id": cid, "created_at": created_at, "turns": turns}],
    )


def thumbs_up(raw: Path, cid: str, turn_index: int, dataset: str = "tutoring") -> None:
    event = {"event_id": f"e-{cid}", "conversation_id": cid, "turn_index": turn_index, "rating": 1}
    write_jsonl(raw / "feedback" / dataset / f"{cid}.jsonl", [event])


def bucket(salt: str, group_id: str) -> int:
    return (
        int.from_bytes(hashlib.sha256(f"{salt}\x00{group_id}".encode()).digest()[:8], "big")
        % 10_000
    )


# ---------------------------------------------------------------- [splits] (item 8)


def test_splits_salt_and_validation_ratio_in_turnlake_toml_decide_the_split(tmp_path):
    raw = tmp_path / "raw"
    conversation(raw, "c-1")
    config = '[splits]\nsalt = "conformance-validation"\n[splits.ratios]\nvalidation = 1.0\n'
    built = run_pipeline(raw, tmp_path / "data", config=config)
    splits = built.gold["splits"].to_dicts()
    # the only range is validation = [0, 10000): whatever the bucket, the group is in validation
    assert splits == [
        {
            "group_id": GROUP,
            "bucket": bucket("conformance-validation", GROUP),
            "split": "validation",
            "salt": "conformance-validation",
            "split_group": GROUP,  # no near-duplicate prompt in another group: itself
        }
    ]
    assert built.datasets["sft"]["split"].to_list() == ["validation"]


def test_splits_salt_moves_groups_by_the_hash_of_salt_and_group(tmp_path):
    raw = tmp_path / "raw"
    # eight unrelated questions: no two are near-duplicates, so each conversation is a split
    # group of its own (questions differing only in the asker's id would be one)
    questions = [
        "Why is the sky blue?",
        "How do vaccines train the immune system?",
        "What makes bread dough rise overnight?",
        "Which planet has the longest day?",
        "How are tides caused by the moon?",
        "Why do cats purr when resting?",
        "What is the boiling point of salt water?",
        "How does a bicycle stay upright while moving?",
    ]
    ids = [f"c-{i}" for i in range(len(questions))]
    for cid, question in zip(ids, questions, strict=True):
        conversation(raw, cid, question=question)
    for salt in ("salt-a", "salt-b"):
        config = f'[splits]\nsalt = "{salt}"\n[splits.ratios]\ntrain = 0.5\ntest = 0.5\n'
        built = run_pipeline(raw, tmp_path / f"data-{salt}", config=config, release=False)
        # train = buckets [0, 5000), test = [5000, 10000)
        expected = {
            f"dialogue:tutoring/{c}": "train"
            if bucket(salt, f"dialogue:tutoring/{c}") < 5000
            else "test"
            for c in ids
        }
        got = dict(built.gold["splits"].select("group_id", "split").iter_rows())
        assert got == expected
        assert len(set(got.values())) == 2  # the salt moved groups one by one, not all at once
        assert built.gold["splits"]["salt"].unique().to_list() == [salt]


# ---------------------------------------------------------------- the other tables of turnlake.toml


def test_timezones_table_reads_a_sources_naive_timestamps_in_its_zone(tmp_path):
    raw = tmp_path / "raw"
    conversation(raw, "c-1", created_at="2025-01-15T10:00:00")  # Berlin in January is UTC+1
    built = run_pipeline(
        raw, tmp_path / "data", config='[timezones]\ndialogue = "Europe/Berlin"\n', release=False
    )
    assert built.silver["episodes"]["started_at"].to_list() == [
        datetime(2025, 1, 15, 9, 0, tzinfo=UTC)
    ]


def test_dialogue_turn_index_base_table_points_one_based_feedback_at_the_right_turn(tmp_path):
    raw = tmp_path / "raw"
    conversation(raw, "c-1")
    thumbs_up(raw, "c-1", turn_index=2)  # 1-based: the second turn, the assistant's (#1)
    config = "[dialogue.turn_index_base]\ntutoring = 1\n"
    built = run_pipeline(raw, tmp_path / "data", config=config, release=False)
    rewards = built.gold["turn_rewards"].select("target_id", "reward").to_dicts()
    assert rewards == [
        {"target_id": f"{GROUP}#1", "reward": 0.8}
    ]  # rating 1 → rating_map["1"] = 0.8


def test_limits_table_quarantines_a_record_over_max_record_bytes(tmp_path):
    raw = tmp_path / "raw"
    conversation(raw, "c-1")  # one JSON line of about 230 bytes
    built = run_pipeline(
        raw, tmp_path / "data", config="[limits]\nmax_record_bytes = 100\n", release=False
    )
    assert built.silver["episodes"].height == 0
    assert built.silver["quarantine"].select("source", "error_kind").to_dicts() == [
        {"source": "dialogue", "error_kind": "too_large"}
    ]


def test_ingest_batch_files_bounds_the_files_per_bronze_part(tmp_path):
    raw = tmp_path / "raw"
    for cid in ("c-1", "c-2", "c-3"):
        conversation(raw, cid)
    built = run_pipeline(
        raw, tmp_path / "data", config="[ingest]\nbatch_files = 1\n", release=False
    )
    assert (
        len(current_parts(Layout(built.settings.data_root), "dialogue", "dialogue_conversations"))
        == 3
    )


@pytest.mark.parametrize(("remove", "episodes_left"), [(True, 1), (False, 2)])
def test_ingest_remove_deleted_files_drops_the_rows_of_a_vanished_file(
    tmp_path, remove, episodes_left
):
    raw = tmp_path / "raw"
    conversation(raw, "c-1")
    conversation(raw, "c-2")
    config = f"[ingest]\nremove_deleted_files = {'true' if remove else 'false'}\n"
    run_pipeline(raw, tmp_path / "data", config=config, release=False)
    (raw / "dialogues" / "tutoring" / "c-2.jsonl").unlink()
    built = run_pipeline(raw, tmp_path / "data", config=config, release=False)
    assert built.silver["episodes"].height == episodes_left


def test_privacy_redaction_table_redacts_configured_organization_names_in_the_release(tmp_path):
    raw = tmp_path / "raw"
    turns = [
        {"role": "user", "content": "Does Globex ship on weekends?"},
        {"role": "assistant", "content": "Globex ships every day."},
    ]
    write_jsonl(
        raw / "dialogues" / "tutoring" / "c-1.jsonl", [{"conversation_id": "c-1", "turns": turns}]
    )
    config = '[privacy.redaction]\norg_names = ["Globex"]\n[splits.ratios]\ntrain = 1.0\n'
    built = run_pipeline(raw, tmp_path / "data", config=config)
    released = built.datasets["sft"]["messages"].to_list()[0]
    assert [m["content"] for m in released] == [
        "Does [ORG] ship on weekends?",
        "[ORG] ships every day.",
    ]


# ---------------------------------------------------------------- rewards.toml


def test_a_reward_override_takes_effect_in_gold(tmp_path):
    raw = tmp_path / "raw"
    conversation(raw, "c-1")
    thumbs_up(raw, "c-1", turn_index=1)  # 0-based default: the assistant's turn #1
    built = run_pipeline(
        raw,
        tmp_path / "data",
        rewards={"dialogue_feedback": {"rating_map": {"1": 0.5}}},
        release=False,
    )
    assert built.gold["turn_rewards"]["reward"].to_list() == [0.5]


def test_a_misspelt_reward_override_stops_the_build(tmp_path):
    raw = tmp_path / "raw"
    conversation(raw, "c-1")
    with pytest.raises(SettingsError, match=r"\[dialogue_feedback\] rating_mapp: unknown key"):
        run_pipeline(
            raw, tmp_path / "data", rewards={"dialogue_feedback": {"rating_mapp": {"1": 0.5}}}
        )


# ---------------------------------------------------------------- empty or unrecognised input (item
# 13)


def assert_empty_build_without_release(built) -> None:
    assert {t: f.height for t, f in built.silver.items() if f.height} == {}
    assert built.gold["splits"].height == 0 and built.gold["turn_rewards"].height == 0
    assert built.release is None and not any(Layout(built.settings.data_root).exports.glob("2*"))
    leak = check_verdicts.splits_leak_free(built.settings)
    assert leak.passed, leak.metadata
    verify = check_verdicts.release_verifies(built.settings)
    assert verify.passed and verify.metadata["version"] == "none"
    assert "nothing to release" in verify.metadata["first_problems"]


def test_an_empty_raw_root_builds_empty_tables_and_no_release(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    built = run_pipeline(raw, tmp_path / "data")
    assert_empty_build_without_release(built)
    assert build_summary(built.settings).unrecognised == []


def test_files_in_a_layout_no_adapter_claims_build_nothing_and_are_listed(tmp_path):
    raw = tmp_path / "raw"
    write_jsonl(raw / "sharegpt" / "a.jsonl", [{"text": "hello"}])
    write_jsonl(raw / "sharegpt" / "b.jsonl", [{"text": "hi"}])
    (raw / "notes.txt").write_text("hand-written notes\n")
    built = run_pipeline(raw, tmp_path / "data")
    assert_empty_build_without_release(built)
    expected = ["notes.txt", "sharegpt/a.jsonl", "sharegpt/b.jsonl"]
    assert build_summary(built.settings).unrecognised == expected
    assert raw_status(built.settings).unrecognised == expected
    assert unrecognised_lines(expected, raw) == [
        f"not recognised: 1 file under {raw} (e.g. notes.txt)",
        (
            f"not recognised: 2 files under {raw / 'sharegpt'} (e.g. sharegpt/a.jsonl, "
            "sharegpt/b.jsonl)"
        ),
    ]


def test_unclaimed_files_beside_recognised_ones_are_listed_and_the_rest_is_built(tmp_path):
    raw = tmp_path / "raw"
    conversation(raw, "c-1")
    write_jsonl(
        raw / "dialogues" / "tutoring" / "c-2.json", [{"conversation_id": "c-2"}]
    )  # .json, not .jsonl
    write_jsonl(
        raw / "consent" / "optouts.jsonl", []
    )  # the consent registry is read, not unclaimed
    (raw / ".DS_Store").write_text("")  # hidden files are not raw data
    built = run_pipeline(raw, tmp_path / "data", release=False)
    assert built.silver["episodes"]["episode_id"].to_list() == [GROUP]
    assert unrecognised_files(raw) == ["dialogues/tutoring/c-2.json"]


def test_an_empty_build_after_a_release_keeps_the_release_and_says_nothing_new(tmp_path):
    raw = tmp_path / "raw"
    conversation(raw, "c-1")
    first = run_pipeline(raw, tmp_path / "data")
    assert first.release is not None
    (raw / "dialogues" / "tutoring" / "c-1.jsonl").unlink()
    again = run_pipeline(
        raw,
        tmp_path / "data",
        config="[ingest]\nremove_deleted_files = true\n[splits.ratios]\ntrain = 1.0\n",
    )
    assert again.silver["episodes"].height == 0
    assert again.release == first.release  # nothing new was written; the earlier release stays
    assert check_verdicts.release_verifies(again.settings).passed
    assert pl.read_parquet(first.release / "sft" / "train*.parquet").height >= 1
