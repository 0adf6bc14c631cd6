"""Split assignment and the split proof, on tiny hand-built frames."""

from __future__ import annotations

import hashlib
import tomllib
from pathlib import Path

import orjson
import polars as pl
import pytest

from pipelines.config.settings import split_config_of, validate_config
from pipelines.config.splits import SplitConfig
from pipelines.schemas.gold import Splits
from pipelines.splits.assign import (
    SQL,
    assign_splits,
    human_participants,
    proof_problems,
    split_proof,
)
from tests.unit._gold_helpers import silver_frame

PROJECT = Path(__file__).resolve().parents[2]
CONFIG = SplitConfig()
SALT = "turnlake-splits-v1"


def groups_in(split: str, n: int = 1, prefix: str = "g") -> list[str]:
    """The first `n` group ids `<prefix><i>` that the default config puts in `split`."""
    table = assign_splits(pl.Series([f"{prefix}{i}" for i in range(200)]), CONFIG)
    return table.filter(pl.col("split") == split)["group_id"].head(n).to_list()


def silver_for(
    episodes: list[tuple[str, str, str]], **tables: list[dict]
) -> dict[str, pl.DataFrame]:
    """(episode_id, source, group_id) triples + optional turns / decisions / feedback rows."""
    rows = [
        {
            "episode_id": e,
            "source": s,
            "native_id": e,
            "group_id": g,
            "n_turns": 0,
            "source_file": "f",
        }
        for e, s, g in episodes
    ]
    out = {"episodes": silver_frame("episodes", rows)}
    for name in ("turns", "decisions", "feedback"):
        out[name] = silver_frame(name, tables.get(name, []))
    return out


def dataset(rows: list[tuple[str, str, str]]) -> pl.DataFrame:
    return pl.DataFrame(
        rows,
        schema={"group_id": pl.String, "split": pl.String, "prompt_hash": pl.String},
        orient="row",
    )


# ---------------------------------------------------------------- assignment


def test_bucket_is_first_8_bytes_of_sha256_of_salt_nul_group_mod_10000():
    # non-ASCII ids hash as UTF-8; among 200 ids, digests whose first 8 bytes pass 2**63
    ids = ["alpha", "beta", "émile", "名前", *(f"g{i}" for i in range(200))]
    table = assign_splits(pl.Series(ids), CONFIG)
    assert table.height == len(ids)
    for group, bucket in table.select("group_id", "bucket").iter_rows():
        digest = hashlib.sha256(f"{SALT}\x00{group}".encode()).digest()
        assert bucket == int.from_bytes(digest[:8], "big") % 10_000
    Splits.validate(table, lazy=True)


def test_adding_groups_never_moves_an_existing_group():
    before = assign_splits(pl.Series([f"g{i}" for i in range(500)]), CONFIG)
    after = assign_splits(
        pl.Series(
            [f"g{i}" for i in range(0, 2000, 2)]
            + [f"new{i}" for i in range(300)]
            + [f"g{i}" for i in range(1, 500, 2)]
        ),
        CONFIG,
    )
    joined = before.join(after, on="group_id", suffix="_after")
    assert joined.height == before.height
    assert joined.filter(
        (pl.col("split") != pl.col("split_after")) | (pl.col("bucket") != pl.col("bucket_after"))
    ).is_empty()


def test_one_row_per_distinct_group_ignoring_duplicates_and_nulls():
    table = assign_splits(pl.Series(["b", "a", None, "b"]), CONFIG)
    assert table["group_id"].to_list() == ["a", "b"]
    assert set(table["salt"]) == {SALT}


def test_validation_ratio_cuts_cumulative_bucket_ranges_in_order_train_validation_test():
    config = SplitConfig(ratios={"test": 0.2, "validation": 0.1, "train": 0.7})
    assert config.bucket_ranges() == {
        "train": (0, 7000),
        "validation": (7000, 8000),
        "test": (8000, 10_000),
    }
    table = assign_splits(pl.Series([f"g{i}" for i in range(5000)]), config)
    for split, (lo, hi) in config.bucket_ranges().items():
        part = table.filter(pl.col("split") == split)
        assert part["bucket"].min() >= lo and part["bucket"].max() < hi
        assert abs(part.height / 5000 - config.ratios[split]) < 0.03


def test_changing_the_salt_reshuffles_groups():
    groups = pl.Series([f"g{i}" for i in range(100)])
    assert not assign_splits(groups, CONFIG)["bucket"].equals(
        assign_splits(groups, SplitConfig(salt="other"))["bucket"]
    )


@pytest.mark.parametrize(
    ("ratios", "message"),
    [
        ({"train": 0.8, "test": 0.3}, "sum to 1"),
        ({"train": 1.2, "test": -0.2}, "must be ≥ 0"),
        ({"train": 0.5, "dev": 0.5}, "unknown split"),
    ],
)
def test_invalid_ratios_are_rejected(ratios, message):
    with pytest.raises(ValueError, match=message):
        SplitConfig(ratios=ratios)


def split_config_from(config: dict) -> SplitConfig:
    return split_config_of(validate_config(config).splits)


def test_split_config_comes_from_the_splits_table_of_turnlake_toml_with_defaults():
    with (PROJECT / "turnlake.toml").open("rb") as fh:
        shipped = split_config_from(tomllib.load(fh))
    assert shipped == SplitConfig()
    custom = split_config_from(
        {"splits": {"salt": "s2", "ratios": {"train": 0.8, "validation": 0.1, "test": 0.1}}}
    )
    assert custom.salt == "s2" and custom.bucket_ranges()["validation"] == (8000, 9000)
    assert split_config_from({}) == SplitConfig()


# ---------------------------------------------------------------- proof


def test_proof_of_leak_free_data_has_no_problems_and_is_json():
    train, test = groups_in("train")[0], groups_in("test")[0]
    silver = silver_for(
        [("e1", "study", train), ("e2", "study", test)],
        turns=[
            {
                "turn_id": "e1#0",
                "episode_id": "e1",
                "turn_index": 0,
                "role": "user",
                "actor_id": "p1",
                "internal": False,
            }
        ],
    )
    splits = assign_splits(silver["episodes"]["group_id"], CONFIG)
    proof = split_proof(
        splits, silver, {"sft": dataset([(train, "train", "h1"), (test, "test", "h2")])}, CONFIG
    )
    assert proof_problems(proof) == []
    assert proof["groups_per_split"] == {"test": 1, "train": 1}
    assert proof["participants_per_split"] == {"train": 1}
    assert proof["datasets"]["sft"]["rows_per_split"] == {"test": 1, "train": 1}
    assert proof["salt"] == SALT and proof["ratios"] == {"train": 0.8, "test": 0.2}
    assert orjson.loads(orjson.dumps(proof)) == proof
    assert proof["sql"] == SQL


def test_proof_finds_a_human_decision_actor_in_two_splits():
    train, test = groups_in("train")[0], groups_in("test")[0]
    decisions = [
        {"decision_id": d, "episode_id": e, "actor_id": "user-ana", "actor_type": "human"}
        for d, e in (("d1", "e1"), ("d2", "e2"))
    ]
    silver = silver_for([("e1", "decision", train), ("e2", "decision", test)], decisions=decisions)
    proof = split_proof(assign_splits(silver["episodes"]["group_id"], CONFIG), silver, {})
    assert proof["overlaps"]["participants"]["count"] == 1
    assert proof["overlaps"]["participants"]["examples"][0]["participant_id"] == "decision:user-ana"
    assert any("participants" in p for p in proof_problems(proof))


def test_proof_finds_a_dialogue_rater_in_two_splits():
    train, test = groups_in("train")[0], groups_in("test")[0]
    feedback = [
        {
            "feedback_id": f,
            "episode_id": e,
            "target": "episode",
            "name": "rating",
            "scale": "[-1,1]",
            "source_kind": "human",
            "attributes": '{"extra":{"user_id":"u-1"}}',
        }
        for f, e in (("f1", "e1"), ("f2", "e2"))
    ]
    silver = silver_for([("e1", "dialogue", train), ("e2", "dialogue", test)], feedback=feedback)
    assert human_participants(silver)["participant_id"].unique().to_list() == ["dialogue:u-1"]
    proof = split_proof(assign_splits(silver["episodes"]["group_id"], CONFIG), silver, {})
    assert proof["overlaps"]["participants"]["count"] == 1


def test_proof_finds_the_same_prompt_in_two_splits_within_and_across_datasets():
    train, test = groups_in("train")[0], groups_in("test")[0]
    silver = silver_for([("e1", "dialogue", train), ("e2", "dialogue", test)])
    splits = assign_splits(silver["episodes"]["group_id"], CONFIG)
    within = split_proof(
        splits, silver, {"sft": dataset([(train, "train", "same"), (test, "test", "same")])}
    )
    assert within["datasets"]["sft"]["overlaps"]["prompts"]["count"] == 1
    assert any("sft prompts" in p for p in proof_problems(within))
    across = split_proof(
        splits,
        silver,
        {"sft": dataset([(train, "train", "same")]), "kto": dataset([(test, "test", "same")])},
    )
    assert across["overlaps"]["prompts_across_datasets"]["count"] == 1
    assert across["datasets"]["sft"]["overlaps"]["prompts"]["count"] == 0


def test_proof_lists_the_splits_of_exactly_the_keys_released_in_two():
    """The row-level overlaps (a cheap pass picks the keys before their splits are listed) name
    every key in two splits with its splits, and no other, the null group included."""
    silver = silver_for([("e1", "study", "g1")])
    rl_steps = pl.DataFrame(
        {
            "group_id": ["g1", "g1", "g2", "g2", None, None, "g2", "g2"],
            "split": ["train", "test", "train", "train", "train", "validation", "train", "train"],
            "prompt_hash": ["a", "b", "c", "c", "d", "d", "x", "y"],
            "episode_id": ["e1", "e1", "e2", "e3", "e4", "e4", "e5", "e5"],
        }
    )
    kto = dataset([("g3", "test", "c")])
    proof = split_proof(
        assign_splits(pl.Series(["g1"]), CONFIG), silver, {"rl_steps": rl_steps, "kto": kto}
    )
    overlaps = proof["datasets"]["rl_steps"]["overlaps"]
    assert overlaps["groups"]["examples"] == [
        {"group_id": "g1", "splits": ["test", "train"]},
        {"group_id": None, "splits": ["train", "validation"]},
    ]
    assert overlaps["prompts"]["examples"] == [
        {"prompt_hash": "d", "splits": ["train", "validation"]}
    ]
    assert overlaps["episodes_not_whole"]["examples"] == [
        {"episode_id": "e1", "prompt_hashes": 2, "splits": ["test", "train"]},
        {"episode_id": "e4", "prompt_hashes": 1, "splits": ["train", "validation"]},
        {"episode_id": "e5", "prompt_hashes": 2, "splits": ["train"]},
    ]
    assert proof["overlaps"]["prompts_across_datasets"]["examples"] == [
        {"prompt_hash": "c", "splits": ["test", "train"], "datasets": ["kto", "rl_steps"]},
        {"prompt_hash": "d", "splits": ["train", "validation"], "datasets": ["rl_steps"]},
    ]


def test_proof_finds_a_dataset_row_in_another_split_than_its_group():
    train = groups_in("train")[0]
    silver = silver_for([("e1", "study", train)])
    proof = split_proof(
        assign_splits(silver["episodes"]["group_id"], CONFIG),
        silver,
        {"rl_steps": dataset([(train, "test", "h")])},
    )
    assert proof["datasets"]["rl_steps"]["overlaps"]["split_mismatch"]["count"] == 1
    assert proof_problems(proof)


def test_proof_finds_a_group_without_a_split():
    silver = silver_for([("e1", "study", "g1"), ("e2", "study", "g2")])
    proof = split_proof(assign_splits(pl.Series(["g1"]), CONFIG), silver, {})
    assert proof["overlaps"]["unassigned_groups"]["examples"] == [{"group_id": "g2"}]
    assert proof_problems(proof)


def test_proof_finds_a_group_listed_in_two_splits():
    silver = silver_for([("e1", "study", "g1")])
    row = assign_splits(pl.Series(["g1"]), CONFIG)
    twice = pl.concat([row, row.with_columns(split=pl.lit("validation"))])
    assert split_proof(twice, silver, {})["overlaps"]["groups"]["count"] == 1


def test_proof_flags_a_tampered_bucket_or_a_split_that_disagrees_with_the_ratios():
    silver = silver_for([("e1", "study", "g1")])
    row = assign_splits(pl.Series(["g1"]), CONFIG)
    assert (
        split_proof(row.with_columns(bucket=(pl.col("bucket") + 1) % 10_000), silver, {})[
            "bucket_mismatches"
        ]
        == 1
    )
    other = "test" if row["split"][0] == "train" else "train"
    proof = split_proof(row.with_columns(split=pl.lit(other)), silver, {}, CONFIG)
    assert proof["bucket_mismatches"] == 1 and proof_problems(proof)


def test_dataset_without_a_prompt_hash_column_is_a_problem():
    silver = silver_for([("e1", "study", "g1")])
    frame = dataset([("g1", "train", "h")]).drop("prompt_hash")
    proof = split_proof(assign_splits(pl.Series(["g1"]), CONFIG), silver, {"kto": frame})
    assert proof_problems(proof) == ["kto: lacks column(s) ['prompt_hash']"]


def test_proof_problems_on_an_incomplete_proof():
    assert "proof lacks 'overlaps'" in proof_problems({"salt": SALT})
