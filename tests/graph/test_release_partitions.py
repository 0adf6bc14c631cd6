"""A release from partitioned tables (pipelines/release/build/partitioned.py, batch_files.py): 1 and
8 shards give the same files and content hash; a rebuild after new files writes the new batch's
files and the old files whose rows changed (late feedback, a prompt now dropped as a duplicate) and
hard-links every other file from the previous release; the partition-by-partition datasets, the
duplicate-prompt rule and the split proof equal those of the same tables read as one partition."""

import shutil
from pathlib import Path

import orjson
import polars as pl
import pytest

from pipelines.config.settings import settings_from_config
from pipelines.partitions.store import MAP_TABLE
from pipelines.privacy.key import pseudonym_key
from pipelines.release import assemble
from pipelines.release.build import datasets as partition_datasets
from pipelines.release.build import parts as build_parts
from pipelines.release.store.files import complete_releases, read_manifest
from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout
from tests.graph._earlier_layout import store_whole
from tests.graph._world import build_world
from tests.graph.test_partitions_graph import KEY, _build, demo_built

# tut-1003 and tut-1009 (the demo's tutoring conversations in the test split) ask exactly this
SEMICOLON = [
    {"role": "student", "content": "What does a semicolon do?"},
    {
        "role": "tutor",
        "content": "It joins two closely related independent clauses without a conjunction.",
    },
    {"role": "student", "content": "Can I use it before 'however'?"},
    {"role": "tutor", "content": "Yes: 'It rained; however, we went out.'"},
]
DUPLICATES = [f"tut-88{i}" for i in range(6)]
NEW = [
    {
        "conversation_id": f"tut-77{i}",
        "turns": [
            {"role": "student", "content": f"What is {i} cubed?"},
            {"role": "tutor", "content": f"{i} cubed is {i**3}."},
        ],
    }
    for i in range(2)
] + [{"conversation_id": c, "turns": SEMICOLON} for c in DUPLICATES]
LATE_FEEDBACK = {  # tut-1000 is in the train split, batch 0
    "conversation_id": "tut-1000",
    "turn_index": 1,
    "rating": 1,
    "created_at": "2024-07-01T10:00:00Z",
}


def _latest(data: Path) -> Path:
    exports = Layout(data).exports
    return exports / complete_releases(exports)[-1]


def _parquet_files(release: Path) -> dict[str, Path]:
    return {p.relative_to(release).as_posix(): p for p in sorted(release.rglob("*.parquet"))}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A folder for this module's builds, with the environment they run in."""
    yield from build_world(tmp_path_factory, "release-partitions", KEY)


def _rows_by_split(release: Path) -> dict[tuple[str, str], list[int]]:
    """(dataset, split) → the sorted hashes of its rows over all its files."""
    found: dict[tuple[str, str], list[int]] = {}
    for name, path in _parquet_files(release).items():
        frame = pl.read_parquet(path)
        if frame.height == 0:  # an empty split's file: no rows to compare
            continue
        key = (name.split("/")[0], frame.get_column("split")[0])
        found.setdefault(key, []).extend(frame.hash_rows(7).to_list())
    return {key: sorted(hashes) for key, hashes in found.items()}


def test_one_and_eight_shards_give_the_same_rows_and_hash_in_their_own_file_slices(built_once):
    one, eight = (_latest(demo_built(built_once, shards)[1]) for shards in (1, 8))
    files, files_eight = _parquet_files(one), _parquet_files(eight)
    # by hand: one landing batch; 1 shard is slice p000, 8 shards are slices p000 (s00-s03) and
    # p001 (s04-s07); a split without rows is one empty file either way (no slice)
    empty = {n for n in files if n.endswith("-empty.parquet")}
    assert empty == {n for n in files_eight if n.endswith("-empty.parquet")}
    assert files and {n.rsplit("-", 1)[1] for n in set(files) - empty} == {"p000.parquet"}
    slices = {n.rsplit("-", 1)[1] for n in set(files_eight) - empty}
    assert slices == {"p000.parquet", "p001.parquet"}
    assert _rows_by_split(one) == _rows_by_split(eight)
    assert read_manifest(one)["content_hash"] == read_manifest(eight)["content_hash"]


@pytest.fixture(scope="module")
def incremental(world, built_once):
    """A build with 4 shards, then new conversations (6 of them copies of tut-1003, which the
    demo puts in the test split) and a late rating of tut-1000 (train), and a rebuild."""
    raw, data = demo_built(built_once, 4, to=world / "incremental")
    first = _latest(data)
    before_map = stored.read(Layout(data), "silver", MAP_TABLE)
    lines = b"".join(orjson.dumps(c) + b"\n" for c in NEW)
    (raw / "dialogues" / "tutoring" / "batch-077.jsonl").write_bytes(lines)
    (raw / "feedback" / "tutoring" / "events-077.jsonl").write_bytes(
        orjson.dumps(LATE_FEEDBACK) + b"\n"
    )
    _build(raw, data, 4)
    return data, first, _latest(data), before_map


@pytest.fixture(scope="module")
def late_rating_in_one_slice(world, built_once):
    """A build with 8 shards (file slices p000 and p001 of batch 0), a late rating of tut-1000
    and a rebuild."""
    raw, data = demo_built(built_once, 8, to=world / "late-rating")
    first = _latest(data)
    (raw / "feedback" / "tutoring" / "events-078.jsonl").write_bytes(
        orjson.dumps(LATE_FEEDBACK) + b"\n"
    )
    _build(raw, data, 8)
    return data, first, _latest(data)


def test_a_late_rating_rewrites_only_its_slices_files_and_links_the_other_slices(
    late_rating_in_one_slice,
):
    data, first, second = late_rating_in_one_slice
    layout = Layout(data)
    episodes = stored.read(layout, "silver", "episodes").select("native_id", "group_id")
    placed = stored.read(layout, "silver", MAP_TABLE).join(episodes, on="group_id")
    (key,) = placed.filter(pl.col("native_id") == "tutoring/tut-1000").get_column("_partition")
    rated = f"p{int(key.rsplit('-s', 1)[1]) // 4:03d}"  # by hand: 4 shards per file slice
    old, new = _parquet_files(first), _parquet_files(second)
    assert set(old) == set(new)
    rewritten = {n for n, p in new.items() if p.stat().st_ino != old[n].stat().st_ino}
    # by hand: tut-1000's new rating changes its sft reward and adds a kto row, in its slice only
    assert rewritten == {f"sft/train-b00000-{rated}.parquet", f"kto/train-b00000-{rated}.parquet"}
    other = {n for n in new if "-b00000-p00" in n and rated not in n}
    assert other, "the demo with 8 shards has a second slice"
    inputs = [
        {f["path"]: f.get("inputs") for f in read_manifest(r)["files"]} for r in (first, second)
    ]
    assert all(inputs[0][n] and inputs[0][n] == inputs[1][n] for n in other)  # not ordered again


def _split_of(data: Path, native_ids: list[str]) -> dict[str, str]:
    layout = Layout(data)
    episodes = stored.read(layout, "silver", "episodes").select("native_id", "group_id")
    splits = stored.read(layout, "gold", "splits").select("group_id", "split")
    found = episodes.join(splits, on="group_id").filter(pl.col("native_id").is_in(native_ids))
    return dict(found.select("native_id", "split").iter_rows())


def test_rebuild_writes_the_new_batch_and_changed_files_and_links_the_rest(incremental):
    data, first, second, _ = incremental
    splits = _split_of(data, [f"tutoring/{c}" for c in [*DUPLICATES, "tut-1000", "tut-1003"]])
    assert splits["tutoring/tut-1000"] == "train" and splits["tutoring/tut-1003"] == "test"
    # near-duplicates of tut-1003's prompt (docs/concepts/near-duplicates.md): its split
    assert {splits[f"tutoring/{c}"] for c in DUPLICATES} == {"test"}
    old, new = _parquet_files(first), _parquet_files(second)
    # by hand: the new batch's files; sft and kto of train in batch 0 (tut-1000's new rating:
    # its sft reward and a new kto row). The copies join tut-1003's split (test), not its
    # partition: their rows repeat its rows exactly, are released once, and its test file stays
    expected = {n for n in new if "-b00001" in n} | {
        "sft/train-b00000-p000.parquet",
        "kto/train-b00000-p000.parquet",
    }
    rewritten = {
        n for n, p in new.items() if n not in old or p.stat().st_ino != old[n].stat().st_ino
    }
    assert any("-b00001" in n for n in new)
    assert rewritten == expected
    for name in set(new) - expected:
        assert new[name].read_bytes() == old[name].read_bytes(), name


def test_a_prompt_is_kept_only_in_its_earliest_split_across_partitions(incremental):
    data, _, second, before_map = incremental
    splits = _split_of(data, [f"tutoring/{c}" for c in DUPLICATES])
    in_train = sum(1 for s in splits.values() if s == "train")
    sft = pl.read_parquet(sorted((second / "sft").glob("*.parquet")))
    asked = sft.filter(
        (pl.col("messages").list.len() == 4)
        & (pl.col("messages").list.first().struct.field("content") == SEMICOLON[0]["content"])
        & (
            pl.col("messages").list.get(2, null_on_oob=True).struct.field("content")
            == SEMICOLON[2]["content"]
        )
    )
    # by hand: every copy shares tut-1003's split (near-duplicates, here exact), none is in
    # train, and the identical rows of tut-1003, tut-1009 and the copies are released once
    assert in_train == 0
    assert asked.group_by("split").len().sort("split").rows() == [("test", 1)]
    after_map = stored.read(Layout(data), "silver", MAP_TABLE)
    new = after_map.join(before_map, on="group_id", how="anti")
    copies = pl.col("group_id").is_in([f"dialogue:tutoring/{c}" for c in DUPLICATES])
    # the copies share tut-1003's split, not its partition: new groups of batch 1 like the others
    # (a near-duplicate cluster ties splits, which the release keys each partition on)
    assert new.filter(copies).height == len(DUPLICATES)
    assert set(new.get_column("batch")) == {1}


def test_partition_by_partition_equals_the_tables_as_one_partition(incremental):
    """Datasets, dropped duplicates, split proof and ledger built per partition equal those
    built from the same snapshot's tables stored whole, which are one partition."""
    data, *_ = incremental
    one, parts = one_and_many(data.parent / "raw-incremental", data)
    assert one.dropped == parts.dropped and one.dropped["sft"] > 0
    assert one.proof == parts.proof
    assert one.ledger == parts.ledger
    assert one.staged.names == parts.staged.names
    for name in one.staged.names:
        # their files, finished batch by batch: the same rows in the same (release) order
        assert one.staged.whole(name).equals(parts.staged.whole(name)), name
    one.staged.remove()
    parts.staged.remove()


def _count_built_and_privatized(monkeypatch) -> tuple[list[str], list[str]]:
    """The partitions the next release builds and privatizes, as they are (lists filled then)."""
    built, privatized = [], []
    tables, privatize_all = partition_datasets._tables, build_parts.privatize_all

    def counted_tables(layout, keys, *args):
        for key, silver, gold in tables(layout, keys, *args):
            built.append(key)
            yield key, silver, gold

    def counted_privatize(root, pending, *args):
        privatized.extend(p.key for p in pending)
        yield from privatize_all(root, pending, *args)

    monkeypatch.setattr(partition_datasets, "_tables", counted_tables)
    monkeypatch.setattr(build_parts, "privatize_all", counted_privatize)
    return built, privatized


def test_a_change_in_one_partition_rebuilds_and_reprivatizes_only_that_partition(
    incremental, monkeypatch
):
    """One more rating of tut-1000 changes its partition alone: the next release builds and
    privatizes that partition only; every other one is a store look-up (its entries, counted
    through the two functions that make them)."""
    data, *_ = incremental
    tmp = data.parent
    raw, copy = tmp / "raw-one-partition", tmp / "one-partition"
    shutil.copytree(tmp / "raw", raw)
    shutil.copytree(data, copy)
    again = LATE_FEEDBACK | {"rating": -1, "created_at": "2024-07-02T10:00:00Z"}
    (raw / "feedback" / "tutoring" / "events-078.jsonl").write_bytes(orjson.dumps(again) + b"\n")
    built, privatized = _count_built_and_privatized(monkeypatch)
    _build(raw, copy, 4)
    layout = Layout(copy)
    episodes = stored.read(layout, "silver", "episodes").filter(
        pl.col("native_id") == "tutoring/tut-1000"
    )
    partitions = stored.read(layout, "silver", MAP_TABLE)
    group = partitions.filter(pl.col("group_id") == episodes.get_column("group_id").item())
    expected = [group.get_column("_partition").item()]  # by hand: tut-1000's partition alone
    assert partitions.get_column("_partition").n_unique() > 1  # others there, untouched
    assert built == expected and privatized == expected
    assert (
        read_manifest(_latest(copy))["content_hash"] != read_manifest(_latest(data))["content_hash"]
    )


def test_new_conversations_asking_an_old_prompt_join_its_partition_and_split(
    world, built_once, monkeypatch
):
    """New conversations asking tut-1003's prompt are its near-duplicates: they join its split
    (test), not its partition, instead of dropping its rows from the test split; only the new
    batch's partitions are built and privatized (tut-1003's partition keeps its groups' splits
    and its episodes' clusters); their rows repeat tut-1003's exactly and are released once, so
    the test file keeps its rows and the ledger stays exact. (Before near-duplicate clusters, the
    copies landed in train; until 2026-11-29 they joined tut-1003's partition, which was then
    built and privatized again.)"""
    raw, data = demo_built(built_once, 4, to=world / "dropped-only")
    first = _latest(data)
    lines = b"".join(orjson.dumps(c) + b"\n" for c in NEW)
    (raw / "dialogues" / "tutoring" / "batch-077.jsonl").write_bytes(lines)
    built, privatized = _count_built_and_privatized(monkeypatch)
    _build(raw, data, 4)
    partitions = stored.read(Layout(data), "silver", MAP_TABLE)
    # by hand: every new conversation, the copies included, is a new group in batch 1's
    # partitions, and only those are built and privatized
    new = sorted(set(partitions.filter(pl.col("batch") == 1).get_column("_partition")))
    copies = [f"dialogue:tutoring/{c}" for c in DUPLICATES]
    assert set(partitions.filter(pl.col("group_id").is_in(copies))["_partition"]) <= set(new)
    assert new and sorted(built) == new
    assert sorted(privatized) == new
    old, second = _parquet_files(first), _parquet_files(_latest(data))
    test_file = "sft/test-b00000-p000.parquet"  # tut-1003's partition's test rows
    assert pl.read_parquet(second[test_file]).height == pl.read_parquet(old[test_file]).height
    one, parts = one_and_many(raw, data)
    assert one.ledger == parts.ledger and one.dropped == parts.dropped
    one.staged.remove()
    parts.staged.remove()


def _built(raw: Path, data: Path):
    settings = settings_from_config(raw, data, None)
    key, _ = pseudonym_key(settings)
    return assemble._built(settings, None, key)


def one_and_many(raw: Path, data: Path):
    """The release request's parts built from the built snapshot of `data` partition by
    partition, and from a copy of it whose tables are stored whole (one partition), with the
    same pseudonym key: (one, many)."""
    copy = data.parent / f"{data.name}-as-one"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(data, copy)
    store_whole(copy)
    assert partition_datasets.partitions_in_force(Layout(copy))[0].key == stored.ONE_PARTITION
    return _built(raw, copy), _built(raw, data)


def _rows_with_word(release: Path, word: str) -> int:
    pattern = rf"(?:^|[^A-Za-z0-9]){word}(?:[^A-Za-z0-9]|$)"
    sft = pl.read_parquet(sorted((release / "sft").glob("*.parquet")))
    contents = sft.select(pl.col("messages").list.eval(pl.element().struct.field("content")))
    return contents.filter(
        pl.col("messages").list.eval(pl.element().str.contains(pattern)).list.any()
    ).height


def test_an_old_partition_whose_text_names_a_new_subject_id_is_privatized_again(world, built_once):
    """A rater whose id is a word old texts already hold ('however', in the semicolon
    conversations): every partition holding it must be privatized under the new ids, also one
    whose privatized entry is stored (its texts are pseudonymized, not served from the store)."""
    raw, data = demo_built(built_once, 4, to=world / "new-subject-id")
    assert _rows_with_word(_latest(data), "however") > 0  # the word is there before
    rating = LATE_FEEDBACK | {"user_id": "however", "created_at": "2024-07-03T10:00:00Z"}
    (raw / "feedback" / "tutoring" / "events-079.jsonl").write_bytes(orjson.dumps(rating) + b"\n")
    _build(raw, data, 4)
    # by hand: 'however' is now a subject id, so no released text may still hold it
    assert _rows_with_word(_latest(data), "however") == 0
