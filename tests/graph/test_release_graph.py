"""Releases through the whole graph: verified, content-addressed, queryable, immutable."""

import orjson
import polars as pl
import pytest

from pipelines.release.store.files import complete_releases, latest_release, read_manifest
from pipelines.release.store.verify import verify_release
from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout
from pipelines.warehouse.views import query
from tests.graph.test_build_graph import clean_materialized, materialize_all

DATASETS = {"sft", "preference", "kto", "rl_steps", "decisions", "stepwise"}


@pytest.fixture(scope="module")
def built(tmp_path_factory, built_once):
    return clean_materialized(built_once, tmp_path_factory.mktemp("release") / "built")


def test_build_ends_with_a_verified_release_of_every_dataset(built):
    _, data = built
    exports = Layout(data).exports
    version = latest_release(exports)
    assert version is not None and verify_release(exports / version) == []
    manifest = read_manifest(exports / version)
    assert set(manifest["counts"]) == DATASETS
    assert (
        manifest["config"]["splits"]["salt"] and manifest["config"]["rewards"]["rules"]["enabled"]
    )
    assert {f["file"] for f in manifest["raw_files"]} and all(
        f["fingerprint"] for f in manifest["raw_files"]
    )
    assert (exports / version / "split_proof.json").exists()


def test_the_release_proves_no_near_duplicate_prompt_cluster_in_two_splits(built):
    _, data = built
    exports = Layout(data).exports
    proof = orjson.loads((exports / latest_release(exports) / "split_proof.json").read_bytes())
    assert proof["overlaps"]["near_duplicates"]["count"] == 0
    assert proof["near_duplicate_clusters"]["clusters"] > 0  # the prompts were clustered
    # the released rows: every (keyed) cluster in one split, and some rows carry one
    version = exports / latest_release(exports)
    clustered = 0
    for name in ("sft", "kto", "preference"):
        rows = pl.read_parquet(sorted((version / name).glob("*.parquet"))).drop_nulls(
            "dedup_cluster"
        )
        clustered += rows.height
        per_cluster = rows.group_by("dedup_cluster").agg(pl.col("split").n_unique())
        assert per_cluster.filter(pl.col("split") > 1).height == 0, name
    assert clustered > 0


def test_latest_release_is_queryable_through_duckdb_views(built):
    _, data = built
    rows = query(Layout(data), "SELECT split, count(*) AS n FROM release.sft GROUP BY ALL")
    assert rows.height >= 1 and rows["n"].sum() > 0


def test_identical_rebuild_creates_no_new_release_and_new_data_does(built):
    raw, data = built
    exports = Layout(data).exports
    before = complete_releases(exports)
    assert materialize_all(raw, data).success
    assert complete_releases(exports) == before

    splits_before = stored.read(Layout(data), "gold", "splits").select("group_id", "split")
    extra = raw / "dialogues" / "support" / "late-arrival.jsonl"
    extra.write_text(
        '{"conversation_id": "late-1", "turns": [{"role": "user", "content": "Is my order late?"}, '
        '{"role": "assistant", "content": "It ships tomorrow morning."}]}\n'
    )
    assert materialize_all(raw, data).success
    after = complete_releases(exports)
    assert len(after) == len(before) + 1 and latest_release(exports) == after[-1]
    assert all(verify_release(exports / v) == [] for v in after)  # older releases untouched
    splits_after = stored.read(Layout(data), "gold", "splits").select("group_id", "split")
    assert splits_after.height == splits_before.height + 1  # the new conversation is a new group
    assert (
        splits_before.join(splits_after, on="group_id", suffix="_after")
        .filter(pl.col("split") != pl.col("split_after"))
        .height
        == 0
    )  # no existing group moved
