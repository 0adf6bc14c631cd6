"""`turnlake export minari` on a hand-made tiny release (release/store/minari_files.py
`export_minari`, api/exports.py): the Minari datasets written outside the release, which stays
byte for byte as published; refused when its `rl_steps` differ from its manifest; nothing left
when the check finds a problem; the default folder deleted by `forget`. Expected values are
written here by hand."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import polars as pl
import pytest

from pipelines.api.errors import NoRelease, ReleaseMismatch
from pipelines.api.exports import export_minari as api_export_minari
from pipelines.release.store.files import MANIFEST
from pipelines.release.store.minari_files import export_minari
from pipelines.release.trainability.minari_episodes import minari_problems
from pipelines.storage.fingerprint import sha256_file
from pipelines.storage.layout import Layout
from pipelines.storage.subject_data import delete_caches

minari = pytest.importorskip("minari")

VERSION = "20990101-0123456789"
SCHEMA = {
    "split": pl.String,
    "episode_id": pl.String,
    "source": pl.String,
    "policy": pl.String,
    "step": pl.Int64,
    "observation": pl.String,
    "action": pl.String,
    "reward": pl.Float64,
    "is_last": pl.Boolean,
    "is_terminal": pl.Boolean,
}
ROWS = [  # a two-step truncated study episode, a one-step terminal one, a decision actor
    ("train", "s2", "study", "iql", 0, "[hi]", "ask", 0.25, False, False),
    ("train", "s1", "study", "iql", 0, "[hello]", "agree", 1.0, True, True),
    ("train", "s2", "study", "iql", 1, "[hi, ok]", "stop", -1.0, True, False),
    ("test", "d1", "decision", "actor-1", 0, "{}", "approve", -0.5, True, False),
]


@pytest.fixture
def release(tmp_path) -> Path:
    """A published release of `rl_steps` alone, as written without `[release] minari`."""
    folder = tmp_path / "data" / "exports" / VERSION
    (folder / "rl_steps").mkdir(parents=True)
    frame = pl.DataFrame(ROWS, schema=SCHEMA, orient="row")
    for split in ("train", "test"):
        frame.filter(pl.col("split") == split).write_parquet(
            folder / "rl_steps" / f"{split}-00000-of-00001.parquet"
        )
    files = [
        {"path": p.relative_to(folder).as_posix(), "sha256": sha256_file(p), "rows": None}
        for p in sorted((folder / "rl_steps").glob("*.parquet"))
    ]
    manifest = {
        "version": VERSION,
        "created_at": "2099-01-01T00:00:00+00:00",
        "counts": {"rl_steps": {"test": 1, "train": 3}},
        "files": files,
    }
    (folder / MANIFEST).write_bytes(orjson.dumps(manifest))
    (folder.parent / "LATEST").write_text(VERSION)
    return folder


def _digests(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): sha256_file(p) for p in folder.rglob("*") if p.is_file()
    }


def test_the_export_loads_outside_the_release_which_stays_as_published(
    release, tmp_path, monkeypatch
):
    before = _digests(release)
    target = tmp_path / "out" / VERSION
    target.parent.mkdir()
    section = export_minari(release, target, check=minari_problems)
    assert _digests(release) == before  # no minari/ in it, manifest and files unchanged
    assert section["datasets"]["turnlake/study/train-v0"] | {"view": "study"} == {
        "view": "study",
        "split": "train",
        "episodes": 2,
        "steps": 3,
        "texts_with_nul": 0,
    }
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(target))
    views = ("study", "decision", "social_rl", "social_rl_coach")
    assert set(minari.list_local_datasets()) == {
        f"turnlake/{v}/{s}-v0" for v in views for s in ("train", "test")
    }
    study = minari.load_dataset("turnlake/study/train-v0")
    episodes = {}
    for e in study.iterate_episodes():
        (meta,) = study.storage.get_episode_metadata([e.id])
        episodes[meta["episode_id"]] = (
            list(e.observations),
            list(e.actions),
            e.rewards.tolist(),
            e.terminations.tolist(),
            e.truncations.tolist(),
        )
    assert episodes == {
        "s1": (["[hello]", ""], ["agree"], [1.0], [True], [False]),
        "s2": (
            ["[hi]", "[hi, ok]", ""],
            ["ask", "stop"],
            [0.25, -1.0],
            [False, False],
            [
                False,
                True,
            ],
        ),
    }
    decision = minari.load_dataset("turnlake/decision/test-v0")
    assert (decision.total_episodes, decision.total_steps) == (1, 1)


def test_the_export_sets_no_environment_variable_in_the_calling_process(
    release, tmp_path, monkeypatch
):
    """Minari reads its folder from `MINARI_DATASETS_PATH` only; setting it in a build's process,
    where other threads may read the environment meanwhile, can crash the process (setenv is not
    thread-safe), so it is set in the writer's own process alone."""
    changed: list[str] = []
    monkeypatch.setattr(os, "putenv", lambda key, value: changed.append(key))
    monkeypatch.setattr(os, "unsetenv", lambda key: changed.append(key))
    monkeypatch.delenv("MINARI_DATASETS_PATH", raising=False)
    target = tmp_path / "out" / VERSION
    target.parent.mkdir()
    section = export_minari(release, target, check=minari_problems)
    assert section["datasets"]["turnlake/decision/test-v0"]["episodes"] == 1  # it was written
    assert changed == []
    assert "MINARI_DATASETS_PATH" not in os.environ


def test_an_export_replaces_the_earlier_one(release, tmp_path):
    target = tmp_path / VERSION
    (target / "turnlake" / "study" / "old-v0").mkdir(parents=True)
    export_minari(release, target)
    assert not (target / "turnlake" / "study" / "old-v0").exists()
    assert (target / "turnlake" / "study" / "train-v0" / "data").is_dir()


def test_rl_steps_that_differ_from_the_manifest_are_refused(release, tmp_path):
    changed = pl.DataFrame([ROWS[3]], schema=SCHEMA, orient="row").with_columns(reward=pl.lit(1.0))
    changed.write_parquet(release / "rl_steps" / "test-00000-of-00001.parquet")
    with pytest.raises(ValueError, match="1 rl_steps files differ from the manifest"):
        export_minari(release, tmp_path / VERSION)
    assert not (tmp_path / VERSION).exists()


def test_nothing_is_left_when_the_check_finds_a_problem(release, tmp_path):
    target = tmp_path / VERSION
    with pytest.raises(ValueError, match="do not match rl_steps: \\['a problem'\\]"):
        export_minari(release, target, check=lambda release, datasets: ["a problem"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]  # no target, no staging


def test_the_api_writes_the_default_folder_and_forget_deletes_it(release, tmp_path, monkeypatch):
    data = tmp_path / "data"
    monkeypatch.setenv("TURNLAKE_PSEUDONYM_KEY", "k" * 32)
    done = api_export_minari(data_root=data)
    assert (done.version, done.path) == (VERSION, data / "minari" / VERSION)
    assert done.datasets["turnlake/study/train-v0"]["episodes"] == 2
    assert minari_problems(release, done.path) == []
    delete_caches(Layout(data))  # what `forget` does to every deleted holder
    assert not (data / "minari").joinpath(VERSION).exists()
    assert (release / MANIFEST).exists()


def test_the_api_names_a_changed_release_a_mismatch(release, tmp_path):
    (release / "rl_steps" / "train-00000-of-00001.parquet").write_bytes(b"not parquet")
    with pytest.raises(ReleaseMismatch, match="rl_steps files differ from the manifest"):
        api_export_minari(VERSION, data_root=tmp_path / "data", to=tmp_path / "out")


def test_a_folder_without_a_manifest_is_no_release(release, tmp_path):
    (release / MANIFEST).unlink()
    with pytest.raises(NoRelease, match=f"no complete release '{VERSION}'"):
        api_export_minari(VERSION, data_root=tmp_path / "data", to=tmp_path / "out")
    assert not (tmp_path / "out" / VERSION).exists()
