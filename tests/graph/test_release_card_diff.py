"""Through the whole graph on the clean fixtures: the dataset card is complete by Hugging Face
conventions and loads with `datasets`; `turnlake diff` shows a seeded change (one new episode,
one changed rating) exactly; a release profile is a loadable config of exactly its rows."""

import json
from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest
import yaml

from pipelines.api.diff import diff
from pipelines.config.schema import Profile
from pipelines.config.settings import settings_from_config
from pipelines.release.assemble import make_release
from pipelines.release.card.columns import RELEASE_COLUMNS, column_description
from pipelines.release.store.files import complete_releases, read_manifest
from pipelines.storage.layout import Layout
from tests.graph.test_build_graph import (
    PROJECT_CONFIG,
    clean_materialized,
    failed_checks,
    materialize_all,
)

NEW_EPISODE = {
    "conversation_id": "c-900",
    "turns": [
        {"role": "user", "content": "Can I pause my subscription for a month while travelling?"},
        {"role": "assistant", "content": "Yes: Account > Plan > Pause, for up to 60 days."},
        {"role": "user", "content": "Will I keep my saved playlists?"},
        {"role": "assistant", "content": "Yes, everything stays as it is while paused."},
    ],
    "tags": ["billing"],
}


@pytest.fixture(scope="module")
def releases(tmp_path_factory, built_once):
    """V1 from the clean fixtures (the build made once per test run, copied); V2 after one new
    conversation (two assistant turns, no feedback) and one rating changed from -1 to +1; V3 =
    V2's data with two profiles."""
    raw, data = clean_materialized(built_once, tmp_path_factory.mktemp("card_diff") / "built")
    (raw / "dialogues" / "support" / "2024-05-03.jsonl").write_text(json.dumps(NEW_EPISODE) + "\n")
    feedback = raw / "feedback" / "support" / "2024-05-01.jsonl"
    before = feedback.read_text()
    # c-101's assistant turn (index 2) was rated -1 twice (a duplicate event): now +1.
    assert before.count('"turn_index":2,"rating":-1') == 2
    feedback.write_text(before.replace('"turn_index":2,"rating":-1', '"turn_index":2,"rating":1'))
    assert failed_checks(materialize_all(raw, data)) == []
    settings = settings_from_config(raw, data, PROJECT_CONFIG)
    profiles = {
        "dialogue_kto": Profile(sources=["dialogue"], datasets=["kto"], min_reward=0.9),
        "study": Profile(sources=["study"], datasets=["sft", "rl_steps"], min_reward=0.0),
    }
    make_release(replace(settings, release_profiles=profiles), today="29991231")
    versions = complete_releases(Layout(data).exports)
    assert len(versions) == 3
    return data, versions


def _card_meta(release: Path) -> dict:
    text = (release / "README.md").read_text(encoding="utf-8")
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n")[1])


def test_diff_shows_the_seeded_change_exactly(releases):
    data, (v1, v2, _) = releases
    found = diff(v1, v2, data_root=data)
    rows = (
        pl.DataFrame(found.rows)
        .group_by("dataset")
        .agg(pl.col("added", "removed", "changed").sum())
    )
    by_dataset = {r["dataset"]: (r["added"], r["removed"], r["changed"]) for r in rows.to_dicts()}
    # sft: the new conversation's two assistant turns, plus c-101's answer, left out while its
    # reward was negative (-0.8) and kept now that it is +0.8. kto: c-101's row changed.
    assert by_dataset == {
        "sft": (3, 0, 0),
        "kto": (0, 0, 1),
        "preference": (0, 0, 0),
        "rl_steps": (0, 0, 0),
        "decisions": (0, 0, 0),
        "stepwise": (0, 0, 0),
    }
    assert found.moved_groups == []
    labels = {x["label"]: (x["before"], x["after"]) for x in found.labels}
    assert labels[True][1] == labels[True][0] + 1 and labels[False][1] == labels[False][0] - 1
    assert found.raw_files == {"added": 1, "removed": 0, "changed": 1}
    assert found.config == [] and found.code == []


def test_new_release_card_carries_the_diff_as_changelog(releases):
    data, (v1, v2, _) = releases
    card = (Layout(data).exports / v2 / "README.md").read_text(encoding="utf-8")
    changelog = card.split("## Changes since the previous release")[1].split("\n## ")[0]
    assert f"Compared with `{v1}`" in changelog and "Groups that moved split: 0" in changelog


def test_card_yaml_has_every_hugging_face_field(releases):
    data, (_, _, v3) = releases
    release = Layout(data).exports / v3
    meta, manifest = _card_meta(release), read_manifest(release)
    for key in ("pretty_name", "language", "license", "license_name", "task_categories"):
        assert meta[key], key
    total = sum(sum(c.values()) for c in manifest["counts"].values())
    assert total < 1000 and meta["size_categories"] == ["n<1K"]
    names = [c["config_name"] for c in meta["configs"]]
    assert [c["config_name"] for c in meta["configs"] if c.get("default")] == ["sft"]
    assert [i["config_name"] for i in meta["dataset_info"]] == names
    for info in meta["dataset_info"]:
        name = info["config_name"]
        counts = manifest["counts"].get(name) or manifest["profiles"][name]["counts"]
        # the splits with rows: datasets cannot load an empty one (a config with none: all)
        loadable = {split: n for split, n in counts.items() if n} or counts
        assert {s["name"]: s["num_examples"] for s in info["splits"]} == loadable
        path = manifest["profiles"][name]["path"] if name in manifest["profiles"] else name
        columns = pl.read_parquet_schema(next((release / path).glob("*.parquet")))
        assert [f["name"] for f in info["features"]] == list(columns)


def test_no_released_column_lacks_a_description(releases):
    data, (_, _, v3) = releases
    release = Layout(data).exports / v3
    for dataset in read_manifest(release)["counts"]:
        columns = list(pl.read_parquet_schema(next((release / dataset).glob("*.parquet"))))
        assert columns == list(RELEASE_COLUMNS[dataset]), dataset
        assert all(column_description(dataset, c) for c in columns), dataset
    card = (release / "README.md").read_text(encoding="utf-8")
    assert "| `source` | `String` | Raw source the row came from" in card


def test_every_config_loads_with_datasets(releases, tmp_path):
    datasets = pytest.importorskip("datasets")
    data, (_, _, v3) = releases
    release = Layout(data).exports / v3
    meta = _card_meta(release)
    for config in meta["configs"]:
        loaded = datasets.load_dataset(str(release), config["config_name"], cache_dir=tmp_path)
        info = next(i for i in meta["dataset_info"] if i["config_name"] == config["config_name"])
        assert {k: v.num_rows for k, v in loaded.items()} == {
            s["name"]: s["num_examples"] for s in info["splits"]
        }


def test_profile_is_a_config_of_exactly_its_rows(releases, tmp_path):
    datasets = pytest.importorskip("datasets")
    data, (_, v2, v3) = releases
    exports = Layout(data).exports
    assert v3 != v2  # same datasets; the profiles are part of the content hash
    base = pl.read_parquet(sorted((exports / v3 / "kto").glob("*.parquet")))
    dialogue = base.filter(pl.col("source") == "dialogue")
    by_hand = dialogue.filter(pl.col("reward") >= 0.9)
    assert 0 < by_hand.height < dialogue.height  # only t-1 (explicit reward 1.0) reaches 0.9
    loaded = datasets.load_dataset(str(exports / v3), "dialogue_kto", cache_dir=tmp_path)
    got = pl.concat([pl.from_arrow(loaded[s].data.table) for s in loaded])
    assert sorted(got["turn_id"]) == sorted(by_hand["turn_id"])
    steps = pl.read_parquet(sorted((exports / v3 / "rl_steps").glob("*.parquet")))
    returns = (
        steps.filter(pl.col("source") == "study")
        .group_by("episode_id")
        .agg(pl.col("reward").sum().alias("ret"), pl.len().alias("n"))
    )
    kept = returns.filter(pl.col("ret") >= 0)
    assert 0 < kept.height < returns.height
    profile = datasets.load_dataset(str(exports / v3), "study-rl_steps", cache_dir=tmp_path)
    got = pl.concat([pl.from_arrow(profile[s].data.table) for s in profile])
    got_episodes = got.group_by("episode_id").len()
    assert dict(got_episodes.iter_rows()) == dict(kept.select("episode_id", "n").iter_rows())
