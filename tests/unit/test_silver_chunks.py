"""Silver chunks (pipelines/transforms/chunks.py): sticky assignment, digests and staleness, by
hand."""

import polars as pl

from pipelines.transforms.chunks import (
    MAP_SCHEMA,
    assign_chunks,
    chunk_digests,
    stale_chunks,
    unit_inputs,
)


def _components(pairs: list[tuple[str, str]]) -> pl.DataFrame:
    return pl.DataFrame(pairs, schema=["unit", "component"], orient="row")


def test_new_components_land_in_the_next_batch_and_known_ones_keep_their_chunk():
    first = assign_chunks(
        _components([("a", "a"), ("b", "a"), ("c", "c")]), pl.DataFrame(schema=MAP_SCHEMA), 1
    )
    assert dict(first.iter_rows()) == {"a": "b00000-k00", "b": "b00000-k00", "c": "b00000-k00"}
    # d is new and alone; e joins c's component: it takes c's chunk
    second = assign_chunks(_components([("a", "a"), ("c", "c"), ("e", "c"), ("d", "d")]), first, 1)
    assert dict(second.iter_rows()) == {
        "a": "b00000-k00",
        "c": "b00000-k00",
        "e": "b00000-k00",
        "d": "b00001-k00",
    }


def test_a_component_joining_two_chunks_moves_to_the_earliest():
    previous = pl.DataFrame({"unit": ["a", "z"], "_partition": ["b00003-k01", "b00001-k05"]})
    mapped = assign_chunks(_components([("a", "a"), ("z", "a")]), previous, 16)
    assert dict(mapped.iter_rows()) == {"a": "b00001-k05", "z": "b00001-k05"}


def test_a_changed_file_changes_only_the_digest_of_the_chunk_holding_its_units():
    chunk_map = pl.DataFrame({"unit": ["a", "b", "c"], "_partition": ["p", "p", "q"]})
    unit_files = pl.DataFrame({"unit": ["a", "b", "c"], "file": ["f1", "f2", "f3"]})
    no_reads = pl.DataFrame(schema={"unit": pl.String, "read": pl.String})
    ids = pl.DataFrame({"file": ["f1", "f2", "f3"], "file_id": ["1", "2", "3"]})
    before = chunk_digests(chunk_map, unit_inputs(unit_files, ids, no_reads), "s")
    edited = ids.with_columns(
        file_id=pl.when(pl.col("file") == "f3").then(pl.lit("9")).otherwise("file_id")
    )
    after = chunk_digests(chunk_map, unit_inputs(unit_files, edited, no_reads), "s")
    assert stale_chunks(after, before) == (["q"], [])
    read = pl.DataFrame({"unit": ["a"], "read": ["ranges:7"]})
    assert stale_chunks(
        chunk_digests(chunk_map, unit_inputs(unit_files, ids, read), "s"), before
    ) == (["p"], [])
    assert stale_chunks(
        chunk_digests(chunk_map, unit_inputs(unit_files, ids, no_reads), "t"), before
    ) == (["p", "q"], [])


def test_vanished_chunks_are_listed_for_deletion():
    before = pl.DataFrame({"_partition": ["p", "q"], "digest": ["1", "2"], "scheme": ["s", "s"]})
    after = pl.DataFrame({"_partition": ["q", "r"], "digest": ["2", "3"], "scheme": ["s", "s"]})
    assert stale_chunks(after, before) == (["r"], ["p"])


def test_a_small_batch_is_one_chunk_and_a_big_one_is_cut_into_at_most_sixteen():
    empty = pl.DataFrame(schema=MAP_SCHEMA)
    small = assign_chunks(_components([(f"u{i}", f"u{i}") for i in range(1_999)]), empty)
    assert set(small.get_column("_partition")) == {"b00000-k00"}  # 1 999 // 1 000 = 1 bucket
    big = assign_chunks(_components([(f"u{i}", f"u{i}") for i in range(40_000)]), empty)
    assert set(big.get_column("_partition")) == {f"b00000-k{k:02d}" for k in range(16)}
