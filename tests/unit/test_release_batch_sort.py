"""One landing batch of a dataset put in release order file by file (pipelines/release/
build/batch_sort.py): the order is the release's (sha256 of the row id, then the flat columns, then
arrival) across partitions, rows that tie are ordered by their flat columns even when they lie in
different partitions, shards split at SHARD_ROWS, and the staged files are the bytes the whole-batch
sort wrote."""

import hashlib

import polars as pl
import pytest

from pipelines.release.build import batch_sort
from pipelines.release.build.batch_sort import FILE, POS, ROW, files_in_order, placed_rows
from pipelines.release.build.staged import BATCH, Source, stage


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _kto(rows: list[tuple]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=["turn_id", "split", "note"], orient="row")


def release_order_of(name: str, frame: pl.DataFrame) -> pl.DataFrame:
    """`frame` in release order through the primary-key sort (the same order as
    `shuffled_order(name, canonical_order(frame))` of build/order.py)."""
    placed, _ = placed_rows(name, [lambda: frame], frame.schema, "b00000-p000")
    return frame[placed.sort(FILE, POS).get_column(ROW)]


def test_rows_sharing_an_id_are_ordered_by_their_flat_columns_nulls_last():
    frame = _kto([("t1", "train", "b"), ("t2", "train", "z"), ("t1", "train", None)])
    frame = pl.concat([frame, _kto([("t1", "train", "a")])])
    # by hand: ids by sha256, then t1's notes a, b, null (null last)
    by_id = sorted(["t1", "t2"], key=_sha)
    expected = [n for t in by_id for n in ({"t1": ["a", "b", None], "t2": ["z"]}[t])]
    assert release_order_of("kto", frame).get_column("note").to_list() == expected


def test_rl_steps_keep_an_episode_together_in_step_order():
    steps = pl.DataFrame(
        {
            "episode_id": ["e1", "e2", "e1", "e2", "e1"],
            "step": [2, 0, 0, 1, 1],
            "split": ["train"] * 5,
        }
    )
    ordered = release_order_of("rl_steps", steps)
    by_id = sorted(["e1", "e2"], key=_sha)
    expected = [(e, s) for e in by_id for s in range(3 if e == "e1" else 2)]
    assert ordered.select("episode_id", "step").rows() == expected


def _parts() -> list[pl.DataFrame]:
    """Three partitions of one batch; t1 lies in two of them (a tie across partitions)."""
    return [
        _kto([("t1", "train", "b"), ("t3", "test", "x"), ("t4", "train", "y")]),
        _kto([("t5", "train", "w"), ("t1", "train", "a")]),
        _kto([("t6", "train", None), ("t7", "test", "v"), ("t8", "train", "u")]),
    ]


def test_files_hold_the_batch_in_release_order_cut_into_shards(tmp_path, monkeypatch):
    monkeypatch.setattr(batch_sort, "SHARD_ROWS", 2)
    parts = _parts()
    out = list(
        files_in_order(
            "kto", [lambda p=p: p for p in parts], parts[0].schema, "b00003-p001", tmp_path / "s"
        )
    )
    # by hand: train has t1(a), t1(b), t4, t5, t6, t8 in sha order of the ids; test t3, t7
    train_ids = sorted(["t1", "t4", "t5", "t6", "t8"], key=_sha)
    train = [(t, n) for t in train_ids for n in {"t1": ["a", "b"]}.get(t, [None])]
    test = [(t, None) for t in sorted(["t3", "t7"], key=_sha)]
    names = [(split, file) for split, file, _ in out]
    assert names == [
        ("train", "train-b00003-p001-00000-of-00003.parquet"),
        ("train", "train-b00003-p001-00001-of-00003.parquet"),
        ("train", "train-b00003-p001-00002-of-00003.parquet"),
        ("test", "test-b00003-p001.parquet"),
    ]
    got = [t for _, _, rows in out for t in rows.get_column("turn_id").to_list()]
    assert got == [t for t, _ in train] + [t for t, _ in test]
    t1_notes = [
        n for _, _, rows in out for t, n in rows.select("turn_id", "note").rows() if t == "t1"
    ]
    assert t1_notes == ["a", "b"]
    assert not (tmp_path / "s").exists()  # the spill folder is removed


def _old_release_files(name: str, whole: pl.DataFrame, batch: int, shard_rows: int) -> dict:
    """What the release wrote before batch_sort: the whole batch sorted at once (canonical by the
    flat columns, then by sha256 of the id), each split cut into shards of `shard_rows`."""
    from pipelines.release.build.order import canonical_order, shuffled_order

    ordered = shuffled_order(name, canonical_order(whole)).drop(BATCH)
    files = {}
    for split in ("train", "test"):
        part = ordered.filter(pl.col("split") == split)
        n = -(-part.height // shard_rows)
        for i in range(n):
            file = (
                f"{split}-b{batch:05d}-p000-{i:05d}-of-{n:05d}.parquet"
                if n > 1
                else f"{split}-b{batch:05d}-p000.parquet"
            )
            files[file] = part.slice(i * shard_rows, shard_rows)
    return files


@pytest.mark.parametrize("shard_rows", [2, 100])
def test_staged_files_are_the_bytes_the_whole_batch_sort_wrote(tmp_path, monkeypatch, shard_rows):
    monkeypatch.setattr(batch_sort, "SHARD_ROWS", shard_rows)
    parts = [p.with_columns(pl.lit(3, pl.Int64).alias(BATCH)) for p in _parts()]
    sources = {"kto": [Source(3, p.schema, lambda p=p: p) for p in parts]}
    staged = stage(sources, tmp_path / "stage", previous={})
    old = _old_release_files("kto", pl.concat(parts), 3, shard_rows)
    assert [f["file"] for f in staged.files["kto"]] == list(old)
    for file, frame in old.items():
        frame.write_parquet(tmp_path / file, compression="zstd", statistics=True)
        new = (tmp_path / "stage" / "kto" / file).read_bytes()
        assert new == (tmp_path / file).read_bytes(), file


def test_the_key_pass_reads_the_split_and_id_columns_alone_and_ties_the_flat_columns(tmp_path):
    """The first pass decodes only what the release key needs (kto: turn_id and split), the tie
    pass only the flat columns of the parts holding tied rows, neither the nested chat, and the
    files are what reading every column gives."""
    parts = [p.with_columns(chat=pl.lit([1])) for p in _parts()]  # a nested column: never read
    asked: list[list[str]] = []
    reads = [lambda names, p=p: asked.append(names) or p.select(names) for p in parts]
    loads = [lambda p=p: p for p in parts]
    schema = parts[0].schema
    by_reads = list(files_in_order("kto", loads, schema, "b00000-p000", tmp_path / "a", reads))
    by_loads = list(files_in_order("kto", loads, schema, "b00000-p000", tmp_path / "b"))
    assert [(s, f, r.rows()) for s, f, r in by_reads] == [(s, f, r.rows()) for s, f, r in by_loads]
    # t1 ties across parts 0 and 1: their flat columns are read; part 2 has no tie
    assert asked == [["turn_id", "split"]] * 3 + [["turn_id", "split", "note"]] * 2


@pytest.mark.parametrize(("shard_rows", "spilled"), [(8, False), (7, True)])
def test_a_slice_of_at_most_one_files_rows_is_held_not_spilled(
    tmp_path, monkeypatch, shard_rows, spilled
):
    """The three parts hold 8 rows: with 8 rows a file, the pieces stay in memory; with 7 they
    are spilled to the scratch folder, which is there while the files are handed out."""
    monkeypatch.setattr(batch_sort, "SHARD_ROWS", shard_rows)
    parts = _parts()
    spill = tmp_path / "s"
    files = files_in_order(
        "kto", [lambda p=p: p for p in parts], parts[0].schema, "b00000-p000", spill
    )
    next(files)
    assert spill.exists() == spilled
    files.close()
    assert not spill.exists()
