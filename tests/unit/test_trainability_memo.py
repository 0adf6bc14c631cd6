"""The trainability memo (pipelines/release/trainability/memo.py): a release file checked before is
answered by its bytes, with exactly the problems checking it again gives."""

from __future__ import annotations

import orjson
import polars as pl
import pytest

from pipelines.release.trainability import folder as trainability_folder
from pipelines.release.trainability.folder import trainability_problems
from pipelines.release.trainability.memo import MEMO_FILE
from tests.unit.test_release_trainability import WHOLE, chat, steps

LABEL_AGAINST_T1 = "kto: 1 rows whose label is not the sign of the reward, e.g. ['t1']"


def _kto_file(folder, name: str, rewards: list[float], labels: list[bool]) -> None:
    n = len(rewards)
    (folder / "kto").mkdir(parents=True, exist_ok=True)
    pl.DataFrame(
        {
            "turn_id": [f"t{i + 1}" for i in range(n)],
            "reward": rewards,
            "label": labels,
            "prompt": [chat("user")] * n,
            "completion": [chat("assistant")] * n,
            "split": ["train"] * n,
        }
    ).write_parquet(folder / "kto" / name)


def _no_checking(monkeypatch) -> None:
    def refuse(*_args, **_kwargs):
        raise AssertionError("a file was checked again")

    monkeypatch.setattr(trainability_folder, "ranked_problems", refuse)


def test_a_file_checked_before_is_answered_from_the_memo(tmp_path, monkeypatch):
    release, memo = tmp_path / "release", tmp_path / "memo"
    _kto_file(release, "train-b00000.parquet", [0.5, -0.5], [False, False])
    assert trainability_problems(release, memo) == [LABEL_AGAINST_T1]
    _no_checking(monkeypatch)
    assert trainability_problems(release, memo) == [LABEL_AGAINST_T1]


def test_a_file_whose_bytes_changed_is_checked_again(tmp_path):
    release, memo = tmp_path / "release", tmp_path / "memo"
    _kto_file(release, "train-b00000.parquet", [0.5], [True])
    assert trainability_problems(release, memo) == []
    _kto_file(release, "train-b00000.parquet", [0.5], [False])  # same name, a broken label
    assert trainability_problems(release, memo) == [LABEL_AGAINST_T1]


def test_counts_merged_from_remembered_files_equal_those_checked_afresh(tmp_path):
    release, memo = tmp_path / "release", tmp_path / "memo"
    _kto_file(release, "train-b00000.parquet", [0.5, -0.5], [False, False])  # t1 against
    _kto_file(release, "train-b00001.parquet", [-1.0, 1.0], [True, True])  # t1 against
    (release / "rl_steps").mkdir()
    steps(WHOLE[:2]).write_parquet(release / "rl_steps" / "test-b00000.parquet")
    steps(WHOLE[2:]).write_parquet(release / "rl_steps" / "test-b00001.parquet")
    expected = ["kto: 2 rows whose label is not the sign of the reward, e.g. ['t1', 't1']"]
    assert trainability_problems(release) == expected
    assert trainability_problems(release, memo) == expected  # checked, remembered
    assert trainability_problems(release, memo) == expected  # answered from the memo


def test_an_episode_split_over_files_is_remembered_for_the_whole_set(tmp_path, monkeypatch):
    release, memo = tmp_path / "release", tmp_path / "memo"
    (release / "rl_steps").mkdir(parents=True)
    steps(WHOLE[:2]).write_parquet(release / "rl_steps" / "test-b00000.parquet")
    steps(WHOLE[2:]).write_parquet(release / "rl_steps" / "test-b00001.parquet")
    assert trainability_problems(release, memo) == []
    (release / "rl_steps" / "test-b00001.parquet").unlink()  # e1 loses its last step
    problems = trainability_problems(release, memo)
    assert problems and all(p.startswith("rl_steps: 1 episodes") for p in problems)


def test_the_memo_keeps_only_the_entries_of_the_last_check(tmp_path):
    first, second, memo = tmp_path / "first", tmp_path / "second", tmp_path / "memo"
    _kto_file(first, "train-b00000.parquet", [0.5], [True])
    _kto_file(first, "train-b00001.parquet", [-0.5], [False])
    _kto_file(second, "train-b00000.parquet", [0.5], [True])  # the same bytes as in `first`
    trainability_problems(first, memo)
    assert len(orjson.loads((memo / MEMO_FILE).read_bytes())) == 2
    trainability_problems(second, memo)
    assert len(orjson.loads((memo / MEMO_FILE).read_bytes())) == 1


@pytest.mark.parametrize("neutral", [False, True])
def test_the_release_setting_is_part_of_the_key(tmp_path, neutral):
    release, memo = tmp_path / "release", tmp_path / "memo"
    _kto_file(release, "train-b00000.parquet", [0.0], [False])
    trainability_problems(release, memo)  # remembered without a manifest: neutral rows refused
    manifest = {"config": {"release": {"kto_include_neutral": neutral}}}
    (release / "manifest.json").write_bytes(orjson.dumps(manifest))
    assert bool(trainability_problems(release, memo)) is not neutral
