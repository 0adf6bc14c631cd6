"""The global rules of a release built per partition, on hand-made key frames
(pipelines/release/build/datasets.py), and the content-addressed store
(pipelines/release/store/part_cache.py)."""

import polars as pl

from pipelines.release.build import datasets as partition_datasets
from pipelines.release.build.datasets import (
    KEY_SCHEMA,
    Partition,
    bundles,
    dropped_counts,
    kept_rows,
    proof_frames,
)
from pipelines.release.store import part_cache
from pipelines.storage.layout import Layout
from pipelines.storage.subject_data import delete_caches


def _keys(rows: list[tuple]) -> pl.DataFrame:
    """Key rows without a row hash (no two rows are exact duplicates here: test_near_duplicates.py
    has that rule)."""
    names = [*(n for n in KEY_SCHEMA.names() if n != "row_hash"), "_partition"]
    frame = pl.DataFrame(rows, schema=names, orient="row")
    return frame.with_columns(row_hash=pl.lit(None, pl.String)).cast(KEY_SCHEMA)


def test_a_prompt_is_kept_only_in_its_earliest_split_across_datasets_and_partitions():
    keys = _keys(
        [
            # p1: sft train in one partition, kto test in another -> the kto row goes
            ("sft", 0, "p1", "train", "g1", "e1", "b00000-train-s00"),
            ("kto", 0, "p1", "test", "g2", "e2", "b00001-test-s01"),
            # p2: validation and test -> validation kept, test dropped
            ("sft", 0, "p2", "test", "g3", "e3", "b00000-test-s00"),
            ("sft", 1, "p2", "validation", "g4", "e4", "b00001-validation-s00"),
            # p3: twice in train (two partitions) -> both kept
            ("sft", 2, "p3", "train", "g5", "e5", "b00000-train-s00"),
            ("sft", 3, "p3", "train", "g6", "e6", "b00001-train-s02"),
            # no prompt hash: not kept (as the whole-table rule)
            ("rl_steps", 0, None, "train", "g7", "e7", "b00000-train-s00"),
        ]
    )
    kept = kept_rows(keys)
    assert kept.get_column("keep").to_list() == [True, False, False, True, True, True, False]
    assert dropped_counts(kept) == {
        "sft": 1,
        "preference": 0,
        "kto": 1,
        "rl_steps": 1,
        "decisions": 0,
        "stepwise": 0,
    }
    proof = proof_frames(kept)
    assert proof["sft"].get_column("group_id").to_list() == ["g1", "g4", "g5", "g6"]
    assert proof["kto"].height == 0


def test_store_entries_are_whole_and_pruned(tmp_path):
    root = tmp_path / "parts"
    frame = pl.DataFrame({"a": [1, 2]})
    part_cache.save(root, "k1", {"n": 1}, {"f": frame})
    part_cache.save(root, "k2", {"n": 2}, {"f": frame})
    meta, frames = part_cache.load(root, "k1")
    assert meta["n"] == 1 and frames["f"].equals(frame)
    assert part_cache.load(root, "missing") == ({}, {})
    part_cache.prune(root, ["k2"])
    assert not part_cache.has(root, "k1") and part_cache.has(root, "k2")


def test_an_entry_written_a_frame_at_a_time_is_absent_until_closed(tmp_path):
    root = tmp_path / "parts"
    entry = part_cache.Writer(root, "k1")
    entry.write("b", pl.DataFrame({"a": [1]}))
    entry.write("a", pl.DataFrame({"a": [2]}))
    assert not part_cache.has(root, "k1")
    entry.close({"n": 1})
    meta, frames = part_cache.load(root, "k1")
    assert meta == {"n": 1, "frames": ["a", "b"]}
    assert frames["a"]["a"].to_list() == [2] and frames["b"]["a"].to_list() == [1]
    assert [p.name for p in root.iterdir()] == ["k1"]  # no temporary folder left


def test_forget_empties_the_store(tmp_path):
    layout = Layout(tmp_path)
    root = part_cache.cache_root(layout)
    part_cache.save(root, "k1", {}, {"f": pl.DataFrame({"a": [1]})})
    assert root is not None and root.is_relative_to(layout.state) and part_cache.has(root, "k1")
    delete_caches(layout)
    assert not root.exists()


def test_partitions_are_read_in_bundles_of_at_most_the_row_budget_in_order():
    sizes = {"a": 40, "b": 50, "c": 10, "d": 150, "e": 10, "f": 100, "g": 30}
    parts = [Partition(key, 0, "", rows) for key, rows in sizes.items()]
    # a+b+c = 100 exactly; d (150) alone; e+f would be 110; f+g would be 130
    cut = [[p.key for p in bundle] for bundle in bundles(parts, rows=100)]
    assert cut == [["a", "b", "c"], ["d"], ["e"], ["f"], ["g"]]
    assert bundles([], rows=100) == []


def test_a_bundle_read_is_split_back_into_each_partitions_rows_in_order():
    read = pl.DataFrame(
        {"episode_id": ["e1", "e2", "e3", "e4"], "_partition": ["p1", "p2", "p1", "p2"]}
    )
    split = partition_datasets._split_by_partition(read, ["p1", "p2", "p3"])
    assert split["p1"].to_dict(as_series=False) == {"episode_id": ["e1", "e3"]}
    assert split["p2"].to_dict(as_series=False) == {"episode_id": ["e2", "e4"]}
    assert split["p3"].schema == pl.Schema({"episode_id": pl.String}) and split["p3"].is_empty()
