"""Partition keys, sticky assignment, digests and chunks (pipelines/partitions/), by hand."""

import polars as pl

from pipelines.config.splits import SplitConfig
from pipelines.partitions.assign import MAP_SCHEMA, assign_partitions, scheme_of
from pipelines.partitions.rows import changed, digests
from pipelines.partitions.store import chunks

CONFIG = SplitConfig(
    salt="s", ratios={"train": 0.8, "test": 0.2}
)  # train [0, 8000), test [8000, 10000)


def _splits(rows: list[tuple[str, int, str]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=["group_id", "bucket", "split"], orient="row")


def test_shards_cut_the_whole_bucket_range_into_equal_slices_whatever_the_split():
    # 4 shards: slices of 2500 buckets; f (train) and g (test) share the last one
    groups = [("a", 0, "train"), ("b", 2499, "train"), ("c", 2500, "train"), ("d", 4999, "train")]
    groups += [("e", 5000, "train"), ("f", 7500, "train"), ("g", 8000, "test"), ("h", 9999, "test")]
    mapped = assign_partitions(_splits(groups), pl.DataFrame(schema=MAP_SCHEMA), CONFIG, 4)
    assert dict(mapped.select("group_id", "_partition").iter_rows()) == {
        "a": "b00000-s00",
        "b": "b00000-s00",
        "c": "b00000-s01",
        "d": "b00000-s01",
        "e": "b00000-s02",
        "f": "b00000-s03",
        "g": "b00000-s03",
        "h": "b00000-s03",
    }


def test_known_groups_keep_their_partition_and_new_ones_get_the_next_batch():
    first = assign_partitions(
        _splits([("a", 10, "train")]), pl.DataFrame(schema=MAP_SCHEMA), CONFIG, 4
    )
    second = assign_partitions(_splits([("a", 10, "train"), ("z", 10, "train")]), first, CONFIG, 4)
    assert dict(second.select("group_id", "_partition").iter_rows()) == {
        "a": "b00000-s00",
        "z": "b00001-s00",
    }
    third = assign_partitions(_splits([("z", 10, "train"), ("y", 9000, "test")]), second, CONFIG, 4)
    assert dict(third.select("group_id", "batch").iter_rows()) == {"y": 2, "z": 1}  # a is gone


def test_a_new_shard_count_reassigns_every_group_to_batch_zero():
    first = assign_partitions(
        _splits([("a", 7999, "train")]), pl.DataFrame(schema=MAP_SCHEMA), CONFIG, 4
    )
    again = assign_partitions(_splits([("a", 7999, "train")]), first, CONFIG, 1)
    assert again.row(0, named=True)["_partition"] == "b00000-s00"
    assert scheme_of(CONFIG, 4) != scheme_of(CONFIG, 1)


def test_digests_ignore_row_order_and_see_one_changed_value():
    rows = pl.DataFrame({"_partition": ["p", "p", "q"], "x": [1, 2, 3]})
    one = digests({"t": rows})
    assert one.equals(digests({"t": rows.reverse()}))
    assert dict(one.select("_partition", "rows").iter_rows()) == {"p": 2, "q": 1}
    edited = digests({"t": rows.with_columns(x=pl.Series([1, 2, 4]))})
    assert changed(edited, one) == ["q"]


def test_changed_lists_new_and_vanished_partitions():
    before = pl.DataFrame({"_partition": ["p", "q"], "digest": ["1", "2"], "rows": [1, 1]})
    after = pl.DataFrame({"_partition": ["q", "r"], "digest": ["2", "3"], "rows": [1, 1]})
    assert changed(after, before) == ["p", "r"]


def test_chunks_respect_the_row_budget_and_keep_a_big_partition_alone():
    sizes = pl.DataFrame({"_partition": ["a", "b", "c", "d"], "rows": [3, 3, 10, 1]})
    assert list(chunks(sizes, budget=6)) == [["a", "b"], ["c"], ["d"]]


def _sized(rows: list[tuple[str, int, str, int]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=["group_id", "bucket", "split", "episodes"], orient="row")


def _placed(rows: list[tuple[str, int, str, int]], shards: int | str, target: int) -> dict:
    """group → partition of the groups `rows` (group, bucket, split, episodes) in a first batch."""
    mapped = assign_partitions(
        _sized(rows), pl.DataFrame(schema=MAP_SCHEMA), CONFIG, shards, target
    )
    return dict(mapped.select("group_id", "_partition").iter_rows())


def test_auto_gives_a_batch_one_shard_per_target_episodes_over_all_splits():
    # 14 train + 7 test episodes / 20 per partition → 2 slices of 5000 buckets; d and e (test)
    # share the last with c (train); no group holds more than a quarter of 20
    groups = [("a", 0, "train", 5), ("b", 4999, "train", 5), ("c", 5000, "train", 4)]
    groups += [("d", 8000, "test", 5), ("e", 9999, "test", 2)]
    assert _placed(groups, "auto", 20) == {
        "a": "b00000-s00",
        "b": "b00000-s00",
        "c": "b00000-s01",
        "d": "b00000-s01",
        "e": "b00000-s01",
    }


def test_auto_makes_a_small_batch_of_several_splits_one_partition():
    # 1 train + 1 test episode, 5 per partition: one slice, not one per split
    groups = [("a", 0, "train", 1), ("b", 9999, "test", 1)]
    mapped = assign_partitions(_sized(groups), pl.DataFrame(schema=MAP_SCHEMA), CONFIG, "auto", 5)
    assert set(mapped.get_column("_partition")) == {"b00000-s00"}


def test_auto_gives_a_group_bigger_than_the_target_one_partition_of_its_own():
    # a holds 100 episodes (> 20): a slice of its own whatever its size, after the bucket slices;
    # b, c, d 5 each (a quarter of 20, not more) → 15 / 20 → 1 slice: b, c, d s00, a s01
    # (uncapped: 115 / 20 = 6 slices, most of them empty; a spread by its bucket 0 would share
    # s00 with b, c, d, which every night that adds to a would transform again)
    groups = [("a", 0, "train", 100), ("b", 3334, "train", 5), ("c", 7999, "train", 5)]
    groups += [("d", 9999, "test", 5)]
    assert _placed(groups, "auto", 20) == {
        "a": "b00000-s01",
        "b": "b00000-s00",
        "c": "b00000-s00",
        "d": "b00000-s00",
    }


def test_auto_gives_each_big_group_its_own_partition_in_the_order_of_their_names():
    # x (6) and y (7) hold more than a quarter of the target 20: slices of their own, by name,
    # after the one bucket slice that b (1 episode) takes: b s00, x s01, y s02
    groups = [("y", 0, "train", 7), ("b", 9000, "test", 1), ("x", 5000, "train", 6)]
    assert _placed(groups, "auto", 20) == {
        "b": "b00000-s00",
        "x": "b00000-s01",
        "y": "b00000-s02",
    }


def test_auto_puts_the_groups_giving_no_episode_of_a_batch_of_several_slices_together():
    # b, c, d, e 5 episodes each, f 1 → 21 / 20 → 2 bucket slices; o, p give none (orphan
    # events): one slice of their own, s02, not s00 / s01 beside the others (a later file adding
    # to o would transform b again)
    groups = [("b", 0, "train", 5), ("o", 1, "train", 0), ("c", 9999, "test", 5)]
    groups += [("p", 9998, "test", 0), ("d", 2, "train", 5), ("e", 9997, "test", 5)]
    groups += [("f", 4999, "train", 1)]
    assert _placed(groups, "auto", 20) == {
        "b": "b00000-s00",
        "c": "b00000-s01",
        "d": "b00000-s00",
        "e": "b00000-s01",
        "f": "b00000-s00",
        "o": "b00000-s02",
        "p": "b00000-s02",
    }


def test_auto_keeps_the_groups_giving_no_episode_in_a_batch_of_one_slice():
    # a night's batch of 3 episodes (one slice): its orphans share that slice, no second one
    groups = [("b", 0, "train", 3), ("o", 9999, "test", 0)]
    mapped = assign_partitions(_sized(groups), pl.DataFrame(schema=MAP_SCHEMA), CONFIG, "auto", 20)
    assert set(mapped.get_column("_partition")) == {"b00000-s00"}


def test_fixed_shards_spread_big_groups_and_orphans_by_bucket():
    # shards = 2: N slices of the bucket range, whatever the episodes
    groups = [("a", 0, "train", 100), ("o", 9999, "test", 0), ("b", 5000, "train", 1)]
    assert _placed(groups, 2, 5) == {
        "a": "b00000-s00",
        "b": "b00000-s01",
        "o": "b00000-s01",
    }


def test_auto_sizes_a_later_batch_on_its_own_and_keeps_the_groups_already_assigned():
    # 5 groups of 5, 5, 5, 5, 1 episodes / 20 → 2 slices: a (7999) in the 2nd
    groups = [("a", 7999, "train", 5), ("b", 0, "train", 5), ("c", 1, "train", 5)]
    groups += [("d", 2, "train", 5), ("e", 3, "train", 1)]
    first = assign_partitions(_sized(groups), pl.DataFrame(schema=MAP_SCHEMA), CONFIG, "auto", 20)
    first = first.filter(pl.col("group_id") == "a")
    assert first.row(0, named=True)["_partition"] == "b00000-s01"
    # a small batch (z: 1 episode; a's 10 more do not count) gets 1 slice; a new target (24)
    # sizes only the new batch
    second = assign_partitions(
        _sized([("a", 7999, "train", 10), ("z", 7999, "train", 1)]), first, CONFIG, "auto", 24
    )
    assert dict(second.select("group_id", "_partition").iter_rows()) == {
        "a": "b00000-s01",
        "z": "b00001-s00",
    }
    assert scheme_of(CONFIG, "auto") not in {scheme_of(CONFIG, n) for n in range(65)}


def _clusters(pairs: list[tuple[str, str]]) -> pl.DataFrame:
    return pl.DataFrame(pairs, schema=["group_id", "cluster"], orient="row")


def test_groups_of_one_cluster_share_a_partition_by_the_bucket_of_the_first():
    # a (bucket 0) and h (9999) are one cluster: both in a's slice s00, not h's s03
    groups = [("a", 0, "train"), ("c", 2500, "train"), ("h", 9999, "test")]
    mapped = assign_partitions(
        _splits(groups),
        pl.DataFrame(schema=MAP_SCHEMA),
        CONFIG,
        4,
        clusters=_clusters([("a", "x"), ("h", "x")]),
    )
    assert dict(mapped.select("group_id", "_partition").iter_rows()) == {
        "a": "b00000-s00",
        "c": "b00000-s01",
        "h": "b00000-s00",
    }


def test_a_cluster_takes_the_earliest_partition_of_its_groups_and_a_new_group_joins_it():
    first = assign_partitions(
        _splits([("a", 9999, "test"), ("c", 0, "train")]),
        pl.DataFrame(schema=MAP_SCHEMA),
        CONFIG,
        4,
    )
    second = assign_partitions(
        _splits([("c", 0, "train")]), first.filter(pl.col("group_id") == "c"), CONFIG, 4
    )
    moved = pl.concat([first.filter(pl.col("group_id") == "a"), second])
    assert dict(moved.select("group_id", "_partition").iter_rows()) == {
        "a": "b00000-s03",
        "c": "b00000-s00",
    }
    # a unit now links a and c, and z (new) joins them: all three go to c's b00000-s00, batch 0
    groups = [("a", 9999, "test"), ("c", 0, "train"), ("z", 5000, "train")]
    joined = assign_partitions(
        _splits(groups), moved, CONFIG, 4, clusters=_clusters([(g, "k") for g in "acz"])
    )
    assert set(joined.select("_partition", "batch").rows()) == {("b00000-s00", 0)}


def test_auto_weighs_a_cluster_by_all_its_groups_episodes():
    # a + b are one cluster of 6 episodes, more than a quarter of the target 20 (a or b alone, 3,
    # is not): a slice of its own, s01, after the one bucket slice that c (1 episode) takes
    groups = [("a", 0, "train", 3), ("b", 9999, "test", 3), ("c", 7000, "train", 1)]
    mapped = assign_partitions(
        _sized(groups),
        pl.DataFrame(schema=MAP_SCHEMA),
        CONFIG,
        "auto",
        20,
        clusters=_clusters([("a", "k"), ("b", "k")]),
    )
    assert dict(mapped.select("group_id", "_partition").iter_rows()) == {
        "a": "b00000-s01",
        "b": "b00000-s01",
        "c": "b00000-s00",
    }
