"""A partitioned release finished one landing batch at a time (pipelines/release/build/ staged.py,
card_stats.py, batch_files.py): per-batch aggregates merged equal what the whole dataset gives, and
each batch's file holds its rows in the whole dataset's release order."""

import hashlib
import os
from pathlib import Path

import numpy as np
import polars as pl

from pipelines.release.build.batch_files import add_to_totals
from pipelines.release.build.card_stats import FrameStats
from pipelines.release.build.staged import BATCH, Source, stage

_KEY = b"k" * 32


def _kto(batch: int, rows: list[tuple]) -> pl.DataFrame:
    return pl.DataFrame(
        rows, schema=["turn_id", "split", "group_id", "label", "note"], orient="row"
    ).with_columns(pl.lit(batch, pl.Int64).alias(BATCH))


# turn, split, group, label, note (batch 0's notes are all null: a Null column there)
_B0 = [("t1", "train", "g1", True, None), ("t2", "train", "g1", True, None)]
_B0 += [("t3", "test", "g2", False, None)]
_B1 = [("t5", "train", "g3", True, "n5"), ("t4", "train", "g3", False, "n4")]
_B1 += [("t6", "test", None, True, "n6")]


def test_card_figures_merged_over_batches_are_counted_by_hand():
    stats = FrameStats.of(_kto(0, _B0).drop(BATCH))
    stats.add(_kto(1, _B1).drop(BATCH))
    assert stats.rows == {"train": 4, "test": 2} and stats.height == 6
    assert stats.groups == {"train": {"g1", "g3"}, "test": {"g2", None}}  # null counts as a group
    assert stats.labels == {"train": (4, 3), "test": (2, 1)}  # (rows, true labels)


def test_missing_reward_margins_are_summed_over_batches():
    pairs = pl.DataFrame(
        {
            "split": ["train"] * 3,
            "reward_chosen": [1.0, None, 0.5],
            "reward_rejected": [0.0, 0.0, None],
        }
    )
    stats = FrameStats.of(pairs.head(1))
    stats.add(pairs.tail(2))
    assert stats.missing_margin == 2


def test_estimated_bytes_of_a_split_are_the_sum_over_its_batches():
    """Polars' estimated size of one split's rows, batch by batch (validity bitmaps are sized per
    frame, so the sum is not the size of one concatenated frame: the card states the sum)."""
    batches = [_kto(0, _B0).drop(BATCH), _kto(1, _B1).drop(BATCH)]
    stats = FrameStats.of(batches[0])
    stats.add(batches[1])
    for split in ("train", "test"):
        expected = sum(b.filter(pl.col("split") == split).estimated_size() for b in batches)
        assert stats.bytes[split] == expected


def test_content_hash_sums_do_not_depend_on_how_rows_fall_into_files():
    frame = (
        pl.concat([_kto(0, _B0), _kto(1, _B1)], how="vertical_relaxed")
        .drop(BATCH)
        .filter(pl.col("split") == "train")
    )
    one, two = {}, {}
    add_to_totals(one, "kto", "train", frame)
    add_to_totals(two, "kto", "train", frame.head(1))
    add_to_totals(two, "kto", "train", frame.tail(3))
    assert one == two
    (key,) = one
    sums = [int(frame.hash_rows(seed).to_numpy().sum(dtype=np.uint64)) for seed in _seeds()]
    assert one[key] == [4, *sums]


def _seeds() -> tuple[int, int]:
    from pipelines.release.build.batch_files import _SEEDS

    return _SEEDS


def _order(ids: list[str]) -> list[str]:
    """The release order by hand: sha256 of the row id (kto's id is its turn_id)."""
    return sorted(ids, key=lambda i: hashlib.sha256(i.encode()).hexdigest())


def test_each_batch_file_holds_its_rows_in_release_order_in_the_whole_schema(tmp_path):
    frames = {0: _kto(0, _B0), 1: _kto(1, _B1)}
    sources = {
        "kto": [
            Source(batch, frame.schema, lambda frame=frame: frame)
            for batch, frame in frames.items()
        ]
    }
    staged = stage(sources, tmp_path / "stage", previous={})
    files = [f["file"] for f in staged.files["kto"]]
    assert files == ["train-b00000-p000.parquet", "train-b00001-p000.parquet"] + [
        "test-b00000-p000.parquet",
        "test-b00001-p000.parquet",
    ]
    train1 = pl.read_parquet(tmp_path / "stage" / "kto" / "train-b00001-p000.parquet")
    assert train1.get_column("turn_id").to_list() == _order(["t4", "t5"]) == ["t4", "t5"]
    train0 = pl.read_parquet(tmp_path / "stage" / "kto" / "train-b00000-p000.parquet")
    assert train0.schema["note"] == pl.String  # batch 0 alone would have a Null column
    assert BATCH not in train0.columns
    whole = staged.whole("kto")
    assert whole.get_column("turn_id").to_list() == _order(["t1", "t2", "t3", "t4", "t5", "t6"])
    assert staged.stats["kto"].rows == {"train": 4, "test": 2}


def test_a_dataset_reads_back_whole_from_the_release_its_files_were_moved_into(tmp_path):
    """Profiles read whole datasets after the staged files were moved into the release."""
    frames = {0: _kto(0, _B0), 1: _kto(1, _B1)}
    sources = {"kto": [Source(b, f.schema, lambda f=f: f) for b, f in frames.items()]}
    staged = stage(sources, tmp_path / "stage", previous={})
    (tmp_path / "release").mkdir()
    layout = staged.move_into(tmp_path / "release")
    assert [f["file"] for f in layout["kto"]] == [f["file"] for f in staged.files["kto"]]
    assert (tmp_path / "release" / "kto" / "train-b00001-p000.parquet").exists()
    assert staged.whole("kto").get_column("turn_id").to_list() == _order(
        ["t1", "t2", "t3", "t4", "t5", "t6"]
    )


def test_a_partition_shares_a_file_with_the_three_shards_beside_it():
    from pipelines.release.build.staged import slice_of_partition

    # by hand: 4 partitions per file, so shards 0-3 go to p000, 4-7 to p001, 12 to p003; the key's
    # split (if any) plays no part: a file's split is its rows'
    assert slice_of_partition("b00003-train-s03") == 0
    assert slice_of_partition("b00003-train-s05") == 1
    assert slice_of_partition("b00000-test-s12") == 3
    assert slice_of_partition("b00000-s07") == 1


def test_a_partition_of_several_splits_gives_each_split_its_own_file_of_its_slice(tmp_path):
    """Two partitions of batch 0, shards 0 and 5 (slices p000 and p001), each holding train and
    test rows: four files, each named by its rows' split and its partition's slice, holding
    exactly those rows."""
    shard0 = _kto(0, [("t1", "train", "g1", True, "a"), ("t3", "test", "g2", False, "b")])
    shard5 = _kto(0, [("t7", "test", "g7", True, "c"), ("t8", "train", "g8", True, "d")])
    sources = {
        "kto": [
            Source(0, shard0.schema, lambda: shard0, 0),
            Source(0, shard5.schema, lambda: shard5, 1),
        ]
    }
    staged = stage(sources, tmp_path / "stage", previous={})
    files = [(f["split"], f["file"], f["rows"]) for f in staged.files["kto"]]
    assert files == [
        ("train", "train-b00000-p000.parquet", 1),
        ("train", "train-b00000-p001.parquet", 1),
        ("test", "test-b00000-p000.parquet", 1),
        ("test", "test-b00000-p001.parquet", 1),
    ]
    held = {
        file: pl.read_parquet(tmp_path / "stage" / "kto" / file).get_column("turn_id").to_list()
        for _, file, _ in files
    }
    assert held == {
        "train-b00000-p000.parquet": ["t1"],
        "train-b00000-p001.parquet": ["t8"],
        "test-b00000-p000.parquet": ["t3"],
        "test-b00000-p001.parquet": ["t7"],
    }


def _previous(staged, folder) -> dict:
    from pipelines.release.build.batch_files import Previous

    return {
        f"kto/{f['file']}": Previous(folder / "kto" / f["file"], f["rows_digest"], f.get("inputs"))
        for f in staged.files["kto"]
    }


def test_a_slice_whose_inputs_are_the_previous_releases_is_linked_not_ordered_again(tmp_path):
    """Two file slices of batch 0; the second release changes slice 1 only: slice 0's file is the
    previous one (same inode) and its partition is never loaded; slice 1's file is written anew."""
    slice0, slice1 = _kto(0, _B0[:2]), _kto(0, [("t9", "train", "g9", True, "n9")])

    def never() -> pl.DataFrame:
        raise AssertionError("slice 0 was put in order again")

    def sources(load0, slice1_rows, identity1):
        return {
            "kto": [
                Source(0, slice0.schema, load0, 0, "part-a"),
                Source(0, slice1.schema, lambda: slice1_rows, 1, identity1),
            ]
        }

    first = stage(sources(lambda: slice0, slice1, "part-b"), tmp_path / "one", previous={})
    assert [f["file"] for f in first.files["kto"]] == [
        "train-b00000-p000.parquet",
        "train-b00000-p001.parquet",
    ]
    changed = _kto(0, [("t9", "train", "g9", False, "n9")])
    second = stage(
        sources(never, changed, "part-b2"), tmp_path / "two", _previous(first, tmp_path / "one")
    )
    inode = {
        name: [(tmp_path / name / "kto" / f).stat().st_ino for f in ("train-b00000-p000.parquet",)]
        for name in ("one", "two")
    }
    assert inode["one"] == inode["two"]  # linked
    p001 = pl.read_parquet(tmp_path / "two" / "kto" / "train-b00000-p001.parquet")
    assert p001.get_column("label").to_list() == [False]
    # by hand: t1, t2 (slice 0, read back) and t9 (slice 1) counted; labels true: t1, t2
    assert second.stats["kto"].rows == {"train": 3}
    assert second.stats["kto"].labels == {"train": (3, 2)}
    assert second.files["kto"][0]["inputs"] == first.files["kto"][0]["inputs"]


def _two_releases(tmp_path, store, between=lambda one: None):
    """A first release of two slices of batch 0, then a second whose slice 0 is unchanged: its
    partition is never loaded and its file is linked (see the test above)."""
    slice0, slice1 = _kto(0, _B0), _kto(0, [("t9", "train", "g9", True, "n9")])

    def never() -> pl.DataFrame:
        raise AssertionError("slice 0 was put in order again")

    def sources(load0, identity1):
        return {
            "kto": [
                Source(0, slice0.schema, load0, 0, "part-a"),
                Source(0, slice1.schema, lambda: slice1, 1, identity1),
            ]
        }

    first = stage(sources(lambda: slice0, "part-b"), tmp_path / "one", {}, store=store)
    between(tmp_path / "one")
    previous = _previous(first, tmp_path / "one")
    second = stage(sources(never, "part-b2"), tmp_path / "two", previous, store=store)
    return first, second


def _by_hand(staged) -> None:
    """slice 0: t1, t2 (train, g1, true), t3 (test, g2, false); slice 1: t9 (train, g9, true)."""
    stats = staged.stats["kto"]
    assert stats.rows == {"train": 3, "test": 1}
    assert stats.labels == {"train": (3, 3), "test": (1, 0)}
    assert stats.groups == {"train": {"g1", "g9"}, "test": {"g2"}}


def test_a_linked_slice_is_counted_from_its_stored_figures_without_reading_its_rows(
    tmp_path, monkeypatch
):
    """With the part store, the second release counts the linked slice 0 from the figures the
    first one kept: its rows are never read back, and the card figures and content hash are the
    ones counting its rows gives (by hand, and as a release without the store counts them)."""
    from pipelines.release.build import reused_slices

    counted = reused_slices.figures_of

    def from_store(_one: Path) -> None:
        def read_back(file, rows):
            raise AssertionError(f"{file}: a linked file was read back")

        monkeypatch.setattr(reused_slices, "figures_of", read_back)

    first, second = _two_releases(tmp_path, tmp_path / "store", between=from_store)
    monkeypatch.setattr(reused_slices, "figures_of", counted)
    _, without_store = _two_releases(tmp_path / "read-back", None)
    _by_hand(second)
    assert second.content_hash({}) == without_store.content_hash({})
    assert second.stats["kto"].bytes == without_store.stats["kto"].bytes
    assert second.files["kto"] == without_store.files["kto"]
    assert len(second.entries) == 2  # slice 0's figures (reused) and slice 1's (written)
    assert first.entries[0] in second.entries


def test_a_linked_file_changed_on_disk_since_it_was_counted_is_read_back(tmp_path, monkeypatch):
    """A file of the previous release touched after its figures were kept (another modification
    time: it may hold other bytes) is not counted from the store: its rows are read back."""
    from pipelines.release.build import reused_slices

    read = []
    counted = reused_slices.figures_of
    monkeypatch.setattr(
        reused_slices, "figures_of", lambda file, rows: read.append(file) or counted(file, rows)
    )

    def touch(one: Path) -> None:
        os.utime(one / "kto" / "train-b00000-p000.parquet", ns=(1, 1))
        read.clear()

    _, second = _two_releases(tmp_path, tmp_path / "store", between=touch)
    assert read == ["test-b00000-p000.parquet", "train-b00000-p000.parquet"]
    _by_hand(second)


def test_every_asked_split_gets_a_file_empty_where_it_has_no_rows(tmp_path):
    """A dataset with only train rows gets an empty test file of its own columns; one with no rows
    at all gets both, of the schema it is given; each counts in the content hash."""
    train_only = _kto(0, [r for r in _B0 if r[1] == "train"])
    nothing = pl.DataFrame(schema={"turn_id": pl.String, "split": pl.String, BATCH: pl.Int64})
    declared = pl.Schema({"turn_id": pl.String, "split": pl.String, "reward": pl.Float64})
    sources = {
        "kto": [Source(0, train_only.schema, lambda: train_only)],
        "sft": [Source(0, nothing.schema, lambda: nothing)],
    }
    schemas = {"sft": declared}
    staged = stage(sources, tmp_path / "with", {}, ("train", "test"), lambda: schemas)
    assert [(f["split"], f["file"], f["rows"]) for f in staged.files["kto"]] == [
        ("train", "train-b00000-p000.parquet", 2),
        ("test", "test-empty.parquet", 0),
    ]
    assert [(f["file"], f["rows"]) for f in staged.files["sft"]] == [
        ("train-empty.parquet", 0),
        ("test-empty.parquet", 0),
    ]
    kto_test = pl.read_parquet(tmp_path / "with" / "kto" / "test-empty.parquet")
    assert kto_test.height == 0 and kto_test.schema == train_only.drop(BATCH).schema
    assert pl.read_parquet_schema(tmp_path / "with" / "sft" / "test-empty.parquet") == declared
    assert staged.stats["sft"].rows == {"train": 0, "test": 0}
    assert staged.stats["kto"].rows == {"train": 2, "test": 0}
    without = stage(sources, tmp_path / "without", {}, (), lambda: schemas)
    assert "sft" not in without.files and [f["split"] for f in without.files["kto"]] == ["train"]
    assert staged.content_hash({}) != without.content_hash({})


def test_the_builders_schemas_are_asked_for_only_for_a_dataset_without_rows(tmp_path):
    """Making them runs every dataset builder: a release whose datasets all have rows (an empty
    split takes the dataset's own columns) does not ask for them."""
    train_only = _kto(0, [r for r in _B0 if r[1] == "train"])
    nothing = pl.DataFrame(schema={"turn_id": pl.String, "split": pl.String, BATCH: pl.Int64})
    asked = []

    def schemas() -> dict[str, pl.Schema]:
        asked.append(True)
        return {}

    kto = [Source(0, train_only.schema, lambda: train_only)]
    stage({"kto": kto}, tmp_path / "rows", {}, ("train", "test"), schemas)
    assert asked == []
    stage(
        {"kto": kto, "sft": [Source(0, nothing.schema, lambda: nothing)]},
        tmp_path / "none",
        {},
        ("train", "test"),
        schemas,
    )
    assert asked == [True]
