"""Near-duplicate prompt clusters as split-grouping edges (splits/near_dups.py,
similarity/near_dup.py): hand-built prompts, expected clusters and splits worked out by hand."""

from __future__ import annotations

import hashlib

import polars as pl

from pipelines.config.splits import NearDuplicates, SplitConfig
from pipelines.release.build.datasets import dropped_counts, duplicate_row_counts, kept_rows
from pipelines.similarity.near_dup import components
from pipelines.splits.assign import (
    assign_splits,
    proof_problems,
    split_digests,
    split_proof,
)
from pipelines.splits.near_dups import STORED_SCHEMA, prompt_clusters, split_groups

PARAMS = NearDuplicates()


def stable_bucket(salt: str, group_id: str) -> int:
    """The bucket by hand: first 8 bytes of sha256(salt NUL group_id) mod 10 000."""
    digest = hashlib.sha256(f"{salt}\x00{group_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % 10_000


CAPITAL = "What is the capital of France?"
PROMPTS = {
    "u1": CAPITAL,
    "u2": "what is the capital of france",  # other punctuation and case
    "u3": "Hi! What is the capital of France?",  # a greeting added: 4 of 5 shingles shared
    "u4": "How do I bake sourdough bread at home?",  # unrelated
    "u5": "Explain quantum entanglement to a ten year old.",  # unrelated
}


def _prompts(prompts: dict[str, str]) -> pl.DataFrame:
    return pl.DataFrame({"unit": list(prompts), "text": list(prompts.values())})


def _clusters(prompts: dict[str, str]) -> dict[str, str]:
    found, _ = prompt_clusters(_prompts(prompts), pl.DataFrame(schema=STORED_SCHEMA), PARAMS)
    return dict(found.iter_rows())


def test_prompts_differing_by_punctuation_or_a_greeting_are_one_cluster_unrelated_ones_not():
    cluster = _clusters(PROMPTS)
    assert cluster["u1"] == cluster["u2"] == cluster["u3"]
    assert len({cluster["u1"], cluster["u4"], cluster["u5"]}) == 3


def test_a_prompt_without_a_word_has_no_cluster():
    assert set(_clusters({"a": CAPITAL, "b": "?!", "c": ""})) == {"a"}


def test_groups_of_near_duplicate_prompts_share_a_split_group_and_a_split():
    # episodes e1..e4 in groups g-a, g-b, g-c, g-d; e1 and e3 ask near-duplicates, e2 and e4 not
    episodes = pl.DataFrame(
        {"episode_id": ["e1", "e2", "e3", "e4"], "group_id": ["g-a", "g-b", "g-c", "g-d"]}
    )
    prompts = {"e1": CAPITAL, "e2": PROMPTS["u4"], "e3": PROMPTS["u3"], "e4": PROMPTS["u5"]}
    near, _ = prompt_clusters(_prompts(prompts), pl.DataFrame(schema=STORED_SCHEMA), PARAMS)
    grouped = split_groups(episodes, near.rename({"unit": "episode_id"}))
    assert dict(grouped.sort("group_id").iter_rows()) == {
        "g-a": "g-a",
        "g-b": "g-b",
        "g-c": "g-a",  # the smallest group id of its cluster's groups
        "g-d": "g-d",
    }
    # a salt under which g-a and g-c alone would land in different splits
    config = next(
        SplitConfig(salt=f"s{i}")
        for i in range(100)
        if (stable_bucket(f"s{i}", "g-a") < 8000) != (stable_bucket(f"s{i}", "g-c") < 8000)
    )
    splits = assign_splits(episodes["group_id"], config, grouped)
    by_group = dict(splits.select("group_id", "split").iter_rows())
    assert by_group["g-a"] == by_group["g-c"]
    expected = "train" if stable_bucket(config.salt, "g-a") < 8000 else "test"
    assert by_group["g-c"] == expected


def test_stored_signatures_are_reused_and_only_new_prompts_are_signed():
    _, stored = prompt_clusters(
        _prompts({"u1": CAPITAL}), pl.DataFrame(schema=STORED_SCHEMA), PARAMS
    )
    # a stored signature that no prompt's shingles give: kept as stored, so never re-signed
    planted = stored.with_columns(signature=pl.lit([7] * PARAMS.num_perm, pl.List(pl.Int32)))
    _, again = prompt_clusters(_prompts({"u1": CAPITAL, "u4": PROMPTS["u4"]}), planted, PARAMS)
    key = stored.get_column("key")[0]
    assert again.filter(pl.col("key") == key)["signature"].to_list() == [[7] * PARAMS.num_perm]
    assert again.height == 2  # the new prompt signed and stored
    # a prompt no longer present leaves the store
    _, pruned = prompt_clusters(_prompts({"u4": PROMPTS["u4"]}), again, PARAMS)
    assert key not in pruned["key"].to_list() and pruned.height == 1


def test_off_clusters_nothing():
    found, stored = prompt_clusters(
        _prompts(PROMPTS), pl.DataFrame(schema=STORED_SCHEMA), NearDuplicates(enabled=False)
    )
    assert found.height == 0 and stored.height == 0


def test_components_join_a_chain_to_its_smallest_node():
    edges = pl.DataFrame({"a": ["d", "c", "b", "x"], "b": ["e", "d", "c", "y"]})
    nodes = pl.Series(["a", "b", "c", "d", "e", "x", "y"])
    found = dict(components(edges, nodes).sort("node").iter_rows())
    assert found == {"a": "a", "b": "b", "c": "b", "d": "b", "e": "b", "x": "x", "y": "x"}


def test_the_proof_reports_a_near_duplicate_cluster_in_two_splits():
    episodes = pl.DataFrame(
        {"episode_id": ["e1", "e2"], "group_id": ["g1", "g2"], "source": ["dialogue"] * 2}
    )
    # g1 and g2 in two splits, each bucket its own group's hash (no other problem in the proof)
    both = pl.DataFrame(
        {
            "group_id": ["g1", "g2"],
            "bucket": [stable_bucket("s", "g1"), stable_bucket("s", "g2")],
            "split": ["train", "test"],
            "salt": ["s", "s"],
        }
    )
    near = pl.DataFrame({"episode_id": ["e1", "e2"], "dedup_cluster": ["k", "k"]})
    proof = split_proof(both, {"episodes": episodes}, {}, near_duplicates=near)
    assert proof["overlaps"]["near_duplicates"]["count"] == 1
    assert proof["overlaps"]["near_duplicates"]["examples"][0]["dedup_cluster"] == "k"
    assert any(p.startswith("near_duplicates: 1") for p in proof_problems(proof))
    apart = pl.DataFrame({"episode_id": ["e1", "e2"], "dedup_cluster": ["k", "m"]})
    proof = split_proof(both, {"episodes": episodes}, {}, near_duplicates=apart)
    assert proof["overlaps"]["near_duplicates"]["count"] == 0
    assert proof["near_duplicate_clusters"] == {"clusters": 2, "episodes": 2}


def test_a_band_collision_below_the_threshold_is_not_an_edge():
    # one value per band: prompts sharing 4 of 5 shingles (Jaccard 0.8) surely collide in a band,
    # and only the verification keeps them apart at threshold 0.9
    params = NearDuplicates(threshold=0.9, num_perm=128, bands=128)
    pair = _prompts({"u1": CAPITAL, "u3": PROMPTS["u3"]})
    found, _ = prompt_clusters(pair, pl.DataFrame(schema=STORED_SCHEMA), params)
    assert found["dedup_cluster"].n_unique() == 2
    joined, _ = prompt_clusters(pair, pl.DataFrame(schema=STORED_SCHEMA), NearDuplicates(bands=128))
    assert joined["dedup_cluster"].n_unique() == 1


def test_a_groups_new_split_changes_only_its_partitions_release_inputs():
    """A near-duplicate elsewhere can move a group's split without its partition's silver
    changing: the partition's release inputs hold its groups' splits, so it is built again."""
    placed = pl.DataFrame({"group_id": ["g1", "g2", "g3"], "p": ["P1", "P1", "P2"]})
    before = pl.DataFrame(
        {
            "group_id": ["g1", "g2", "g3"],
            "split": ["train", "train", "test"],
            "split_group": ["g1", "g2", "g3"],
        }
    )
    moved = before.with_columns(
        split=pl.Series(["train", "test", "test"]), split_group=pl.Series(["g1", "g0", "g3"])
    )
    old, new = split_digests(placed, before, "p"), split_digests(placed, moved, "p")
    assert set(old) == {"P1", "P2"}
    assert old["P1"] != new["P1"] and old["P2"] == new["P2"]


def test_a_renamed_split_group_keeping_its_splits_leaves_the_release_inputs():
    """A night's group joining a cluster renames the split group (and bucket) of every group tied
    to it while their splits stay: the released rows read only (group_id, split), so no
    partition holding such a group is built again (at 1 GB: 64 of 68 partitions were)."""
    placed = pl.DataFrame({"group_id": ["g1", "g2", "g3"], "p": ["P1", "P1", "P2"]})
    before = pl.DataFrame(
        {
            "group_id": ["g1", "g2", "g3"],
            "split": ["train", "train", "test"],
            "split_group": ["g1", "g1", "g3"],
            "bucket": [17, 17, 4242],
        }
    )
    renamed = before.with_columns(
        split_group=pl.Series(["g0", "g0", "g0"]), bucket=pl.Series([903, 903, 903])
    )
    assert split_digests(placed, before, "p") == split_digests(placed, renamed, "p")


def test_an_exact_duplicate_row_is_released_once_the_smallest_episode_s():
    keys = pl.DataFrame(
        {
            "dataset": ["sft", "sft", "sft", "sft", "sft", "kto"],
            "row": [0, 1, 2, 0, 1, 0],
            "prompt_hash": ["p1", "p1", "p2", "p1", "p1", "p1"],
            "split": ["train", "train", "train", "test", "train", "train"],
            "group_id": ["g"] * 6,
            "episode_id": ["e2", "e2", "e1", "e3", "e1", "e1"],
            "row_hash": ["h1", "h2", "h3", "h1", "h1", "h1"],
            "_partition": ["P1", "P1", "P2", "P1", "P2", "P2"],  # e2 in an earlier partition
        }
    )
    kept = kept_rows(keys)
    # sft h1 three times: e3's row is a test copy of a train prompt (the prompt rule drops it),
    # e2's duplicates e1's (kept: the smallest episode id); kto's h1 is another dataset's row
    assert kept["keep"].to_list() == [False, True, True, False, True, True]
    assert kept["duplicate_row"].to_list() == [True, False, False, False, False, False]
    assert duplicate_row_counts(kept)["sft"] == 1 and dropped_counts(kept)["sft"] == 1


def test_a_clusters_name_is_its_prompts_content_not_the_engines(monkeypatch):
    """The released dedup_cluster must not change with the code: the name is the smallest sha256
    of a member's normalized words, while the stored key also holds the engine."""
    import hashlib

    from pipelines.splits import near_dups

    empty = pl.DataFrame(schema=STORED_SCHEMA)
    before, _ = prompt_clusters(_prompts({"u1": CAPITAL, "u3": PROMPTS["u3"]}), empty, PARAMS)
    monkeypatch.setattr(near_dups, "engine_digest", lambda: "another engine")
    after, stored = prompt_clusters(_prompts({"u1": CAPITAL, "u3": PROMPTS["u3"]}), empty, PARAMS)
    assert before.equals(after)
    words = ["what is the capital of france", "hi what is the capital of france"]
    by_hand = min(hashlib.sha256(f"\x00{w}".encode()).hexdigest() for w in words)
    assert set(after["dedup_cluster"]) == {by_hand}
    assert by_hand not in set(stored["key"])  # the keys hold the engine


def test_of_exact_duplicates_the_row_kept_is_the_first_by_episode_then_partition_then_row():
    keys = pl.DataFrame(
        {
            "dataset": ["sft"] * 4,
            "row": [0, 1, 9, 3],
            "prompt_hash": ["p1"] * 4,
            "split": ["train"] * 4,
            "group_id": ["g"] * 4,
            "episode_id": [None, "e1", "e1", "e1"],  # a row without an episode id comes last
            "row_hash": ["h1"] * 4,
            "_partition": ["P1", "P2", "P1", "P1"],
        }
    )
    kept = kept_rows(keys)
    assert kept["keep"].to_list() == [False, False, False, True]
    assert kept["duplicate_row"].to_list() == [True, True, True, False]
    assert kept["row"].to_list() == [0, 1, 9, 3]  # in the rows' order
