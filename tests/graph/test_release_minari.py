"""The demo release's `rl_steps` as Minari datasets, read as an offline-RL user reads them: the
release holds none (`[release] minari` is off by default: its content hash is main's), `turnlake
export minari` writes them outside it and prints the `MINARI_DATASETS_PATH`, then
`minari.load_dataset(id)` iterates every episode, compared with the release's `rl_steps` rows
(the expectations come from the Parquet rows, grouped here by hand, never from the writer)."""

from __future__ import annotations

import io
from contextlib import redirect_stdout
from pathlib import Path

import orjson
import polars as pl
import pytest

from pipelines.cli.main import main
from pipelines.release.store.files import MANIFEST, latest_release
from pipelines.release.store.verify import verify_release
from pipelines.storage.fingerprint import sha256_file

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


def _digests(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): sha256_file(p) for p in folder.rglob("*") if p.is_file()
    }


@pytest.fixture(scope="module")
def exported(demo_warehouse, demo_release, tmp_path_factory) -> tuple[Path, str, dict]:
    """`turnlake export minari --to DIR` of the demo's latest release: the folder it printed, what
    it printed, the release's file digests before."""
    before = _digests(demo_release)
    to = tmp_path_factory.mktemp("minari_export")
    printed = io.StringIO()
    with redirect_stdout(printed):
        code = main(["export", "minari", "--data-root", str(demo_warehouse), "--to", str(to)])
    assert code == 0
    return to / demo_release.name, printed.getvalue(), before


@pytest.fixture
def minari_path(exported, monkeypatch) -> Path:
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(exported[0]))
    return exported[0]


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


def test_the_release_holds_none_and_stays_as_published_after_the_export(demo_release, exported):
    manifest = orjson.loads((demo_release / MANIFEST).read_bytes())
    assert not (demo_release / "minari").exists()
    assert "minari" not in manifest
    assert manifest["config"]["formats"] == {"openai": 1}  # main's config: main's content hash
    card = (demo_release / "README.md").read_text(encoding="utf-8")
    assert "`turnlake export minari <version>`" in card
    assert _digests(demo_release) == exported[2]
    assert verify_release(demo_release) == []


def test_the_command_prints_the_path_and_every_dataset_with_its_counts(exported, rl_steps):
    path, printed, _ = exported
    assert f"export MINARI_DATASETS_PATH={path}" in printed
    for view, rows in VIEW_ROWS.items():
        for split in sorted(set(rl_steps["split"])):
            part = rl_steps.filter(rows & (pl.col("split") == split))
            episodes, steps = part["episode_id"].n_unique(), part.height
            assert f"turnlake/{view}/{split}-v0: {episodes} episodes, {steps} steps" in printed
