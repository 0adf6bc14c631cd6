"""A release partition built in chunks of episodes (pipelines/release/build/ chunking.py, units.py):
a partition touched by a late rating and by a new conversation that joins one of its groups rebuilds
and re-privatizes only the chunk of the rated episode, a new chunk for the new conversation and the
partition's rated-alternative pairs; every other chunk is a store look-up. The release has the
content hash of one built at once and whole, and its datasets equal those built from whole tables of
the same snapshot."""

import orjson
import polars as pl
import pytest

import turnlake
from pipelines.partitions.store import MAP_TABLE
from pipelines.release.build import chunking
from pipelines.release.build import datasets as partition_datasets
from pipelines.release.build import parts as build_parts
from pipelines.release.build import units as build_units
from pipelines.release.store.files import read_manifest
from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout
from tests.graph.test_partitions_graph import KEY, _build
from tests.graph.test_release_partitions import LATE_FEEDBACK, _latest, one_and_many

# A new conversation rated by u-166, the rater of tut-1000: rater links put it in tut-1000's
# group, so in its (old) partition; dated after the demo's conversations, it is a new atom. It
# asks tut-1000's first question and its answer is rated down, tut-1000's up (LATE_FEEDBACK): a
# rated-alternatives pair of two episodes in two chunks.
NEW_ID = "tut-7790"
QUESTION = "When did the Western Roman Empire fall?"  # tut-1000's first turn
WORSE = "In 1453, when Constantinople fell."
NEW = {
    "conversation_id": NEW_ID,
    "turns": [{"role": "student", "content": QUESTION}, {"role": "tutor", "content": WORSE}],
    "created_at": "2024-08-01 10:00:00",
}
NEW_RATING = {
    "conversation_id": NEW_ID,
    "turn_index": 1,
    "rating": -1,
    "created_at": "2024-08-01T10:05:00Z",
    "user_id": "u-166",
}
CHUNK_ROWS = 60  # small enough that the demo's partitions make several chunks each


@pytest.fixture(scope="module")
def chunked(tmp_path_factory):
    """The demo built with 4 shards in small chunks, then a late rating of tut-1000 and a new
    conversation of its rater, and a rebuild: (data root, episodes built and units privatized
    by the rebuild). Beside it, `scratch`: the same raw files built at once, not in chunks."""
    tmp = tmp_path_factory.mktemp("release-chunks")
    env = pytest.MonkeyPatch()
    env.setenv("DAGSTER_HOME", str(tmp))
    env.setenv("TURNLAKE_PSEUDONYM_KEY", KEY)
    default_rows = chunking.CHUNK_ROWS
    env.setattr(chunking, "CHUNK_ROWS", CHUNK_ROWS)
    raw, data = tmp / "raw", tmp / "data"
    turnlake.demo(raw_root=raw)
    _build(raw, data, 4)
    first = _latest(data)
    (raw / "dialogues" / "tutoring" / "batch-079.jsonl").write_bytes(orjson.dumps(NEW) + b"\n")
    ratings = [LATE_FEEDBACK, NEW_RATING]
    (raw / "feedback" / "tutoring" / "events-079.jsonl").write_bytes(
        b"".join(orjson.dumps(r) + b"\n" for r in ratings)
    )
    built, privatized, left = [], [], []
    build_partition, privatize_all = partition_datasets.build_partition, build_parts.privatize_all
    chunked_units = build_units._chunked

    def counted_build(silver, gold, *args):
        built.extend(silver["episodes"].get_column("native_id").to_list())
        return build_partition(silver, gold, *args)

    def counted_privatize(root, pending, *args):
        privatized.extend(p.key for p in pending)
        yield from privatize_all(root, pending, *args)

    def watched_chunks(root, partition, silver, gold, *args):
        units = chunked_units(root, partition, silver, gold, *args)
        left.append(len(silver) + len(gold))  # the partition's tables still held once cut
        return units

    env.setattr(partition_datasets, "build_partition", counted_build)
    env.setattr(build_parts, "privatize_all", counted_privatize)
    env.setattr(build_units, "_chunked", watched_chunks)
    _build(raw, data, 4)
    env.setattr(partition_datasets, "build_partition", build_partition)
    env.setattr(build_parts, "privatize_all", privatize_all)
    env.setattr(build_units, "_chunked", chunked_units)
    assert _latest(data) != first
    env.setattr(chunking, "CHUNK_ROWS", default_rows)
    _build(raw, tmp / "scratch", 4)  # the same raw files, built at once and whole
    yield data, built, privatized, left
    env.undo()


def test_the_incremental_chunked_release_has_the_hash_of_one_built_at_once_and_whole(chunked):
    data, *_ = chunked
    incremental = read_manifest(_latest(data))["content_hash"]
    assert incremental == read_manifest(_latest(data.parent / "scratch"))["content_hash"]


def _partition_episodes(data, native_id: str) -> tuple[str, list[str]]:
    """(partition, every episode's native id in it) of the episode `native_id`."""
    layout = Layout(data)
    episodes = stored.read(layout, "silver", "episodes").select("native_id", "group_id")
    placed = stored.read(layout, "silver", MAP_TABLE).join(episodes, on="group_id")
    key = placed.filter(pl.col("native_id") == native_id).get_column("_partition").item()
    return key, placed.filter(pl.col("_partition") == key).get_column("native_id").to_list()


def test_a_touched_partition_rebuilds_only_the_chunks_whose_episodes_changed(chunked):
    data, built, privatized, _ = chunked
    key, members = _partition_episodes(data, "tutoring/tut-1000")
    # by hand: the new conversation joined tut-1000's group, so its partition
    assert f"tutoring/{NEW_ID}" in members
    assert {"tutoring/tut-1000", f"tutoring/{NEW_ID}"} <= set(built)
    assert set(built) <= set(members)  # no other partition was read into a build
    # most of the partition's episodes were not built again: their chunks were reused
    assert len(set(built)) < len(members) / 2
    units = set(privatized)
    # by hand: tut-1000's chunk, the new conversation's chunk, the partition's pairs
    assert len(units) == 3 and f"{key}~pairs" in units
    assert all(unit.startswith(f"{key}~") for unit in units)


def test_a_partition_cut_into_chunks_lets_go_of_its_whole_tables(chunked):
    *_, left = chunked
    # the touched partition was cut again; its chunks, not its whole tables, were held after
    assert left and left == [0] * len(left)


def test_a_chunked_incremental_release_equals_the_release_of_the_tables_as_one_partition(chunked):
    data, *_ = chunked
    one, parts = one_and_many(data.parent / "raw", data)
    assert one.dropped == parts.dropped
    assert one.proof == parts.proof
    assert one.ledger == parts.ledger
    preference = one.staged.whole("preference")
    pairs = preference.filter(pl.col("pair_kind") == "rated_alternatives")
    rejected = pairs.get_column("rejected").list.first().struct.field("content").to_list()
    assert any(WORSE in text for text in rejected)  # by hand: the pair across two chunks
    for name in one.staged.names:
        frame = one.staged.whole(name)
        assert frame.height > 0, name
        assert frame.equals(parts.staged.whole(name)), name
    one.staged.remove()
    parts.staged.remove()
