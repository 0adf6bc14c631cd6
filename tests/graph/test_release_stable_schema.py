"""A stable release schema: a release of one source alone (the clean fixtures' hh_rlhf, which
gives only preference pairs, all in train) still holds every configured dataset and split,
empty where it has no rows, with the columns of the demo release, and every consumer of a
release (DuckDB, `datasets`, the card, verify, trainability, diff, pull) takes it."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest
import yaml

from pipelines.api.loading import load_release
from pipelines.release.card.changelog import diff_markdown
from pipelines.release.card.diff import diff_folders
from pipelines.release.store.files import latest_release, read_manifest
from pipelines.release.store.stores import pull_to_folder
from pipelines.release.store.verify import verify_release
from pipelines.release.trainability.folder import trainability_problems
from pipelines.storage.layout import Layout
from pipelines.storage.objects import ObjectRoot
from pipelines.warehouse.views import query, write_views
from tests.conformance.harness import run_pipeline
from tests.graph.test_build_graph import CLEAN

DATASETS = ("decisions", "kto", "preference", "rl_steps", "sft", "stepwise")  # no surveys
EMPTY = ("decisions", "kto", "rl_steps", "sft", "stepwise")  # hh_rlhf gives none of their rows
CONFIG = """
[release]
minari = true
[splits]
salt = "turnlake-splits-v1"
[splits.ratios]
train = 0.8
test = 0.2
[release.profiles.hh]
sources = ["hh_rlhf"]
datasets = ["sft", "preference"]
"""


@pytest.fixture(scope="module")
def hh_only(tmp_path_factory) -> Path:
    """The data root of a build of the hh_rlhf fixtures alone (3 pairs, every group in train)."""
    root = tmp_path_factory.mktemp("hh_only")
    shutil.copytree(CLEAN / "hh_rlhf", root / "raw" / "hh_rlhf")
    built = run_pipeline(root / "raw", root / "data", config=CONFIG)
    assert built.release is not None
    return root / "data"


def _release(data: Path) -> Path:
    exports = Layout(data).exports
    return exports / latest_release(exports)


def _schema(folder: Path) -> dict[str, pl.Schema]:
    return {p.name: pl.read_parquet_schema(p) for p in sorted(folder.glob("*.parquet"))}


def test_every_dataset_and_split_is_present_empty_with_the_demo_releases_schema(
    hh_only, demo_warehouse
):
    release, demo = _release(hh_only), _release(demo_warehouse)
    counts = read_manifest(release)["counts"]
    assert counts == {name: {"train": 0, "test": 0} for name in EMPTY} | {
        "preference": {"train": 3, "test": 0}
    }
    for name in DATASETS:
        files = _schema(release / name)
        assert {f.split("-", 1)[0] for f in files} == {"train", "test"}, name
        demo_schema = next(iter(_schema(demo / name).values()))
        assert all(schema == demo_schema for schema in files.values()), name
    assert pq.ParquetFile(release / "sft" / "train-empty.parquet").metadata.num_rows == 0


def test_empty_datasets_are_queryable_in_duckdb_as_zero_rows(hh_only):
    layout = Layout(hh_only)
    write_views(layout)
    for name in EMPTY:
        assert query(layout, f"SELECT count(*) AS n FROM release.{name}")["n"].item() == 0
    rows = query(layout, "SELECT split, count(*) AS n FROM release.preference GROUP BY ALL")
    assert dict(rows.iter_rows()) == {"train": 3}
    columns = query(layout, "SELECT * FROM release.sft LIMIT 0").columns
    assert {"messages", "reward", "split", "group_id"} <= set(columns)


def test_empty_datasets_load_in_datasets_with_zero_rows_and_their_features(hh_only, tmp_path):
    datasets = pytest.importorskip("datasets")
    release = _release(hh_only)
    features = datasets.Features.from_arrow_schema(
        pq.read_schema(release / "sft/test-empty.parquet")
    )
    sft = load_release(config="sft", data_root=hh_only, cache_dir=tmp_path)
    assert {s: d.num_rows for s, d in sft.items()} == {"train": 0, "test": 0}
    assert all(d.features == features for d in sft.values())
    preference = load_release(config="preference", data_root=hh_only, cache_dir=tmp_path)
    assert {s: d.num_rows for s, d in preference.items()} == {"train": 3, "test": 0}
    # by the card's configs: every config is known; one with rows loads whole, the test split
    # without rows left out of it (datasets cannot materialize a split of 0 rows)
    loaded = datasets.load_dataset(str(release), "preference", cache_dir=str(tmp_path))
    assert {s: d.num_rows for s, d in loaded.items()} == {"train": 3}
    streamed = datasets.load_dataset(str(release), "sft", streaming=True)
    assert {s: sum(1 for _ in d) for s, d in streamed.items()} == {"train": 0, "test": 0}
    assert streamed["train"].features == features
    files = {"test": str(release / "kto" / "test*.parquet")}
    kto = datasets.load_dataset("parquet", data_files=files, streaming=True)["test"]
    assert sum(1 for _ in kto) == 0 and "label" in kto.features


def _card(release: Path) -> tuple[dict, str]:
    text = (release / "README.md").read_text()
    _, front, body = text.split("---", 2)
    return yaml.safe_load(front), body


def test_card_lists_every_config_and_warns_for_each_empty_dataset_and_split(hh_only):
    meta, body = _card(_release(hh_only))
    configs = {c["config_name"]: c for c in meta["configs"]}
    assert set(configs) == {*DATASETS, "hh-sft", "hh-preference"}
    assert configs["preference"].get("default")  # the first dataset with rows, not empty sft
    assert [f["split"] for f in configs["sft"]["data_files"]] == ["train", "test"]
    assert [f["split"] for f in configs["preference"]["data_files"]] == ["train"]
    info = {i["config_name"]: i for i in meta["dataset_info"]}
    assert [s["num_examples"] for s in info["rl_steps"]["splits"]] == [0, 0]
    warnings = body.split("## Warnings", 1)[1].split("##", 1)[0]
    for name in (*EMPTY, "hh-sft"):
        assert f"- `{name}` is empty: no rows in this release." in warnings, name
    assert "- `preference` has no `test` rows: its `test` file is empty" in warnings
    assert "- `hh-preference` has no `test` rows" in warnings


def test_profile_configs_follow_the_same_rule(hh_only):
    release = _release(hh_only)
    profiles = read_manifest(release)["profiles"]
    assert profiles["hh-sft"]["counts"] == {"test": 0, "train": 0}
    assert profiles["hh-preference"]["counts"] == {"test": 0, "train": 3}
    assert sorted(p.name for p in (release / "profiles" / "hh-sft").iterdir()) == [
        "test.parquet",
        "train.parquet",
    ]


def test_a_release_with_empty_datasets_verifies_is_trainable_diffs_and_pulls(
    hh_only, demo_warehouse, tmp_path
):
    release, demo = _release(hh_only), _release(demo_warehouse)
    assert verify_release(release) == []
    assert trainability_problems(release) == []
    for old, new in ((demo, release), (release, demo)):
        diff = diff_folders(old, new, read_manifest(old), read_manifest(new))
        rows = {(r["dataset"], r["split"]): r for r in diff.rows}
        assert rows[("sft", "test")]["after" if new == release else "before"] == 0
        assert "sft" in diff_markdown(diff)
    copy, problems = pull_to_folder(
        ObjectRoot.parse(release.parent), release.name, tmp_path / "pulled"
    )
    assert problems == [] and (copy / "sft" / "test-empty.parquet").exists()


def test_the_openai_files_follow_the_same_rule(hh_only, tmp_path):
    """Every split of `sft` and `preference` has its JSONL file, empty without rows; each loads
    with `load_release` as 0 rows with the folder card's features, and `datasets` loads the
    splits with lines by the folder's card."""
    datasets = pytest.importorskip("datasets")
    release = _release(hh_only)
    sizes = {
        p.relative_to(release).as_posix(): p.stat().st_size
        for p in release.glob("openai_*/*.jsonl")
    }
    assert {path for path, size in sizes.items() if size} == {"openai_preference/train.jsonl"}
    assert set(sizes) == {
        f"{config}/{split}.jsonl"
        for config in ("openai_sft", "openai_preference")
        for split in ("train", "test")
    }
    sft = load_release(config="openai_sft", data_root=hh_only, cache_dir=tmp_path)
    assert {s: d.num_rows for s, d in sft.items()} == {"train": 0, "test": 0}
    assert list(sft["train"].features) == ["messages"]
    preference = load_release(config="openai_preference", data_root=hh_only, cache_dir=tmp_path)
    assert {s: d.num_rows for s, d in preference.items()} == {"train": 3, "test": 0}
    assert preference["test"].features == preference["train"].features
    loaded = datasets.load_dataset(str(release / "openai_preference"), cache_dir=str(tmp_path))
    assert {s: d.num_rows for s, d in loaded.items()} == {"train": 3}


def test_every_minari_dataset_is_there_with_no_episode(hh_only, monkeypatch):
    """No source of rl_steps in the build (`[release] minari = true`): every view's Minari dataset
    is in every split, loads and iterates to nothing, so a script's `load_dataset` ids hold every
    night."""
    minari = pytest.importorskip("minari")
    release = _release(hh_only)
    assert read_manifest(release)["config"]["formats"] == {"minari": 1, "openai": 1}
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(release / "minari"))
    views = ("study", "decision", "social_rl", "social_rl_coach")
    ids = {f"turnlake/{view}/{split}-v0" for view in views for split in ("train", "test")}
    assert set(minari.list_local_datasets()) == ids
    for dataset_id in ids:
        dataset = minari.load_dataset(dataset_id)
        assert (dataset.total_episodes, list(dataset.iterate_episodes())) == (0, [])
    assert verify_release(release) == []
