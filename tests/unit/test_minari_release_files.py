"""The Minari datasets of a hand-made tiny release (pipelines/exports/minari.py,
release/store/minari_files.py): a one-step terminal episode, a truncated episode whose steps are
in two files, a NUL in a text, a view without rows, a split without rows; loaded with
`minari.load_dataset`, checked by the trainability checks, verified and rebuilt by `forget`.
Every expected value is written here by hand."""

from __future__ import annotations

from pathlib import Path

import orjson
import polars as pl
import pytest

from pipelines.release.store.files import MANIFEST
from pipelines.release.store.forget import _rewrite_release
from pipelines.release.store.minari_files import (
    minari_count_problems,
    rewrite_minari,
    write_release_minari,
)
from pipelines.release.trainability.minari_episodes import minari_problems
from pipelines.storage.fingerprint import sha256_file

minari = pytest.importorskip("minari")

VERSION = "20990101-0123456789"
VIEWS = ("study", "decision", "social_rl", "social_rl_coach")
SCHEMA = {
    "split": pl.String,
    "episode_id": pl.String,
    "source": pl.String,
    "policy": pl.String,
    "step": pl.Int64,
    "observation": pl.String,
    "action": pl.String,
    "reward": pl.Float64,
    "is_first": pl.Boolean,
    "is_last": pl.Boolean,
    "is_terminal": pl.Boolean,
    "discount": pl.Float64,
}


def _row(episode, source, policy, step, obs, action, reward, last, terminal):
    return {
        "split": "train",
        "episode_id": episode,
        "source": source,
        "policy": policy,
        "step": step,
        "observation": obs,
        "action": action,
        "reward": reward,
        "is_first": step == 0,
        "is_last": last,
        "is_terminal": terminal,
        "discount": 0.0 if terminal else 1.0,
    }


# in release order: s2's last step is in the second file (an episode may span files)
FIRST_FILE = [
    _row("s2", "study", "iql", 0, "[hi]", "ask", 0.25, False, False),
    _row("s1", "study", "iql", 0, "[hello]", "agree", 1.0, True, True),
    _row("s2", "study", "iql", 1, "[hi, ok]", "push", 0.0, False, False),
    _row("d1", "decision", "actor-1", 0, '{"a":"x\x00y"}', "approve", -0.5, True, False),
    _row("c1", "social_rl", "coach", 0, '{"round":1}', "none", 0.5, False, False),
    _row("c1", "social_rl", "coach", 1, '{"round":2}', "activate_cue", 0.0, True, False),
]
SECOND_FILE = [_row("s2", "study", "iql", 2, "[hi, ok, no]", "stop", -1.0, True, False)]


@pytest.fixture
def release(tmp_path) -> Path:
    folder = tmp_path / VERSION
    (folder / "rl_steps").mkdir(parents=True)
    pl.DataFrame(FIRST_FILE, schema=SCHEMA).write_parquet(
        folder / "rl_steps" / "train-b00000-p000.parquet"
    )
    pl.DataFrame(SECOND_FILE, schema=SCHEMA).write_parquet(
        folder / "rl_steps" / "train-b00001-p000.parquet"
    )
    pl.DataFrame(schema=SCHEMA).write_parquet(folder / "rl_steps" / "test-empty.parquet")
    return folder


def _rl_files(release: Path) -> list[str]:
    return sorted(p.relative_to(release).as_posix() for p in (release / "rl_steps").glob("*"))


def _write(release: Path) -> dict:
    return write_release_minari(release, _rl_files(release), ["train", "test"], VERSION)


def _episodes(release: Path, monkeypatch, dataset_id: str) -> dict[str, dict]:
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(release / "minari"))
    out = {}
    dataset = minari.load_dataset(dataset_id)
    for e in dataset.iterate_episodes():
        (meta,) = dataset.storage.get_episode_metadata([e.id])
        out[meta["episode_id"]] = {
            "observations": list(e.observations),
            "actions": list(e.actions),
            "rewards": e.rewards.tolist(),
            "terminations": e.terminations.tolist(),
            "truncations": e.truncations.tolist(),
        }
    return out


def test_one_step_terminal_and_truncated_episodes_load_as_written_in_the_rows(release, monkeypatch):
    _write(release)
    study = _episodes(release, monkeypatch, "turnlake/study/train-v0")
    assert study == {
        "s2": {  # three steps, two files; ended without its outcome: truncated
            "observations": ["[hi]", "[hi, ok]", "[hi, ok, no]", ""],
            "actions": ["ask", "push", "stop"],
            "rewards": [0.25, 0.0, -1.0],
            "terminations": [False, False, False],
            "truncations": [False, False, True],
        },
        "s1": {  # one step that ended the session
            "observations": ["[hello]", ""],
            "actions": ["agree"],
            "rewards": [1.0],
            "terminations": [True],
            "truncations": [False],
        },
    }
    coach = _episodes(release, monkeypatch, "turnlake/social_rl_coach/train-v0")
    assert coach["c1"]["actions"] == ["none", "activate_cue"]
    assert coach["c1"]["truncations"] == [False, True]


def test_every_view_has_a_dataset_in_every_split_also_without_rows(release, monkeypatch):
    section = _write(release)
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(release / "minari"))
    ids = {f"turnlake/{v}/{s}-v0" for v in VIEWS for s in ("train", "test")}
    assert set(minari.list_local_datasets()) == ids == set(section["datasets"])
    for view in VIEWS:
        empty = minari.load_dataset(f"turnlake/{view}/test-v0")
        assert (empty.total_episodes, list(empty.iterate_episodes())) == (0, [])
    agents = minari.load_dataset("turnlake/social_rl/train-v0")  # a view with no rows at all
    assert agents.total_episodes == 0
    assert section["datasets"]["turnlake/study/train-v0"] | {"texts_with_nul": 0} == {
        "view": "study",
        "split": "train",
        "episodes": 2,
        "steps": 4,
        "texts_with_nul": 0,
    }


def test_a_nul_is_stored_as_the_replacement_character_and_counted(release, monkeypatch):
    section = _write(release)
    decision = _episodes(release, monkeypatch, "turnlake/decision/train-v0")
    assert decision["d1"]["observations"] == ['{"a":"x\ufffdy"}', ""]
    assert section["datasets"]["turnlake/decision/train-v0"]["texts_with_nul"] == 1


def test_spaces_are_text_fitted_to_the_view_and_equal_in_every_split(release, monkeypatch):
    _write(release)
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(release / "minari"))
    train = minari.load_dataset("turnlake/study/train-v0")
    test = minari.load_dataset("turnlake/study/test-v0")
    obs = train.observation_space
    assert (obs.min_length, obs.max_length) == (0, len("[hi, ok, no]"))
    assert set(obs.characters) == set("[hi, ok, no]") | set("[hello]")
    assert set(train.action_space.characters) == set("askagreepushstop")
    assert test.observation_space == obs


def test_the_checks_find_nothing_on_what_was_written(release):
    _write(release)
    assert minari_problems(release) == []


def test_the_checks_find_a_reward_that_differs_from_the_rows(release):
    _write(release)
    changed = [r | {"reward": 0.75} if r["episode_id"] == "s1" else r for r in FIRST_FILE]
    pl.DataFrame(changed, schema=SCHEMA).write_parquet(
        release / "rl_steps" / "train-b00000-p000.parquet"
    )
    differs = "1 episodes whose steps, rewards or end flags differ from rl_steps, e.g. ['s1']"
    assert minari_problems(release) == [f"minari: turnlake/study/train-v0: {differs}"]


def test_the_checks_find_a_missing_dataset_and_rows_of_no_view(release):
    _write(release)
    stray = [_row("x1", "dialogue", "p", 0, "o", "a", 0.0, True, False)]
    pl.DataFrame(stray, schema=SCHEMA).write_parquet(
        release / "rl_steps" / "train-b00002-p000.parquet"
    )
    for path in (release / "minari" / "turnlake" / "decision" / "test-v0").rglob("*"):
        if path.is_file():
            path.unlink()
    (release / "minari" / "turnlake" / "decision" / "test-v0" / "data").rmdir()
    assert minari_problems(release) == [
        "minari: 1 rl_steps rows are in no Minari view",
        "minari: turnlake/decision/test-v0 is missing (every view has a dataset in every split)",
    ]


def test_verify_finds_counts_that_differ_from_the_datasets(release):
    section = _write(release)
    manifest = {"minari": section}
    assert minari_count_problems(release, manifest) == []
    section["datasets"]["turnlake/study/train-v0"]["steps"] = 5
    assert minari_count_problems(release, manifest) == [
        "minari: turnlake/study/train-v0 episodes or steps differ from the manifest"
    ]


def _manifest(release: Path, section: dict) -> dict:
    files = [
        {"path": p.relative_to(release).as_posix(), "sha256": sha256_file(p), "rows": None}
        for p in sorted(release.rglob("*"))
        if p.is_file()
    ]
    return {
        "version": VERSION,
        "counts": {"rl_steps": {"train": 7, "test": 0}},
        "files": files,
        "raw_files": [],
        "minari": section,
    }


def test_forget_makes_the_datasets_again_without_the_subjects_rows(release, monkeypatch):
    manifest = _manifest(release, _write(release))
    (release / MANIFEST).write_bytes(orjson.dumps(manifest))
    tombstone = {"tombstone_id": "t1", "forgotten_at": "2099-01-01T00:00:00+00:00"}
    assert _rewrite_release(release, ["[hello]"], tombstone) == 1
    after = orjson.loads((release / MANIFEST).read_bytes())
    study = _episodes(release, monkeypatch, "turnlake/study/train-v0")
    assert set(study) == {"s2"}
    assert after["minari"]["datasets"]["turnlake/study/train-v0"]["episodes"] == 1
    for entry in after["files"]:
        assert sha256_file(release / entry["path"]) == entry["sha256"], entry["path"]
    text = b"".join(p.read_bytes() for p in (release / "minari").rglob("*.hdf5"))
    assert b"[hello]" not in text
    assert minari_count_problems(release, after) == []


def test_rewrite_leaves_a_release_made_before_minari_as_it_is(release):
    manifest = {"version": VERSION, "files": []}
    rewrite_minari(release, manifest)
    assert not (release / "minari").exists()
    assert minari_problems(release) == []
