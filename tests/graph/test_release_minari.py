"""The demo release's Minari datasets (pipelines/exports/minari.py), read as an offline-RL user
reads them: `minari.load_dataset(id)` with `MINARI_DATASETS_PATH=<release>/minari`, every episode
iterated and compared with the release's `rl_steps` rows (the expectations come from the Parquet
rows, grouped here by hand, never from the writer)."""

from __future__ import annotations

from pathlib import Path

import orjson
import polars as pl
import pytest

from pipelines.release.store.files import MANIFEST, latest_release

minari = pytest.importorskip("minari")

# the views, as the card documents them: rows of a source, the coach's apart (policy `coach`)
VIEW_ROWS = {
    "study": pl.col("source") == "study",
    "decision": pl.col("source") == "decision",
    "social_rl": (pl.col("source") == "social_rl") & (pl.col("policy") != "coach"),
    "social_rl_coach": (pl.col("source") == "social_rl") & (pl.col("policy") == "coach"),
}


@pytest.fixture(scope="module")
def demo_release(demo_warehouse) -> Path:
    exports = Path(demo_warehouse) / "exports"
    return exports / latest_release(exports)


@pytest.fixture(scope="module")
def rl_steps(demo_release) -> pl.DataFrame:
    return pl.read_parquet(demo_release / "rl_steps" / "*.parquet")


@pytest.fixture
def minari_path(demo_release, monkeypatch) -> Path:
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(demo_release / "minari"))
    return demo_release / "minari"


def _expected_episodes(rows: pl.DataFrame) -> dict[str, dict]:
    """Per release episode: its steps' observations, actions, rewards, end flags in step order."""
    out = {}
    for (episode_id,), steps in rows.sort("step").group_by("episode_id"):
        out[episode_id] = {
            "steps": steps["step"].to_list(),
            "observations": steps["observation"].to_list(),
            "actions": steps["action"].to_list(),
            "rewards": steps["reward"].to_list(),
            "terminations": steps["is_terminal"].to_list(),
            "truncations": (steps["is_last"] & ~steps["is_terminal"]).to_list(),
        }
    return out


def test_every_view_is_a_dataset_in_every_split_and_train_is_not_empty(minari_path, rl_steps):
    splits = sorted(set(rl_steps["split"]))
    ids = set(minari.list_local_datasets())
    assert ids == {f"turnlake/{view}/{split}-v0" for view in VIEW_ROWS for split in splits}
    for view in VIEW_ROWS:
        assert minari.load_dataset(f"turnlake/{view}/train-v0").total_episodes > 0, view


@pytest.mark.parametrize("view", sorted(VIEW_ROWS))
def test_every_episode_matches_the_release_rows(minari_path, rl_steps, view):
    for split in sorted(set(rl_steps["split"])):
        want = _expected_episodes(rl_steps.filter(VIEW_ROWS[view] & (pl.col("split") == split)))
        dataset = minari.load_dataset(f"turnlake/{view}/{split}-v0")
        assert dataset.total_episodes == len(want)
        assert dataset.total_steps == sum(len(e["steps"]) for e in want.values())
        seen = set()
        for episode in dataset.iterate_episodes():
            (meta,) = dataset.storage.get_episode_metadata([episode.id])
            episode_id = meta["episode_id"]
            seen.add(episode_id)
            rows = want[episode_id]
            assert rows["steps"] == list(range(len(rows["steps"])))  # step i is Minari's i
            # one observation more than actions: the one after the last action is not logged
            assert list(episode.observations) == [*rows["observations"], ""]
            assert list(episode.actions) == rows["actions"]
            assert episode.rewards.tolist() == rows["rewards"]
            assert episode.terminations.tolist() == rows["terminations"]
            assert episode.truncations.tolist() == rows["truncations"]
            assert episode.terminations[-1] or episode.truncations[-1]  # every episode ends
        assert seen == set(want)


@pytest.mark.parametrize("view", sorted(VIEW_ROWS))
def test_text_spaces_hold_every_observation_and_action(minari_path, view):
    for path in sorted((minari_path / "turnlake" / view).glob("*-v0")):
        dataset = minari.load_dataset(f"turnlake/{view}/{path.name}")
        obs, act = dataset.observation_space, dataset.action_space
        assert type(obs).__name__ == type(act).__name__ == "Text"
        for episode in dataset.iterate_episodes():
            assert all(obs.contains(o) for o in episode.observations)
            assert all(act.contains(a) for a in episode.actions)


def test_manifest_lists_every_minari_file_and_counts_each_dataset(demo_release, rl_steps):
    manifest = orjson.loads((demo_release / MANIFEST).read_bytes())
    on_disk = {
        p.relative_to(demo_release).as_posix()
        for p in (demo_release / "minari").rglob("*")
        if p.is_file()
    }
    listed = {f["path"] for f in manifest["files"] if f["path"].startswith("minari/")}
    assert listed == on_disk
    assert all(len(f["sha256"]) == 64 for f in manifest["files"] if f["path"] in listed)
    section = manifest["minari"]
    assert section["format"] == 1 and manifest["config"]["formats"]["minari"] == 1
    for dataset_id, entry in section["datasets"].items():
        rows = rl_steps.filter(VIEW_ROWS[entry["view"]] & (pl.col("split") == entry["split"]))
        assert (entry["episodes"], entry["steps"]) == (rows["episode_id"].n_unique(), rows.height)
        assert dataset_id == f"turnlake/{entry['view']}/{entry['split']}-v0"
    card = (demo_release / "README.md").read_text(encoding="utf-8")
    assert 'minari.load_dataset("turnlake/study/train-v0")' in card
    assert "MINARI_DATASETS_PATH" in card
