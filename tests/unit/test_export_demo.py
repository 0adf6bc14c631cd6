"""Datasets built from the demo warehouse: each loads with `datasets.load_dataset("parquet", …)`
with the columns its TRL trainer expects, and rl_steps keeps the RLDS invariants (demo built
once, through the CLI)."""

from __future__ import annotations

import polars as pl
import pytest

from pipelines.config.splits import SplitConfig
from pipelines.exports.datasets import DATASETS, build_datasets
from pipelines.release.store.files import latest_release
from pipelines.release.trainability.folder import trainability_problems
from pipelines.schemas.gold import GOLD_MODELS
from pipelines.schemas.silver import SILVER_MODELS
from pipelines.splits.assign import assign_splits
from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout

TRAINER_COLUMNS = {
    "sft": {"messages"},  # SFTTrainer, conversational
    "preference": {"prompt", "chosen", "rejected"},  # DPOTrainer
    "kto": {"prompt", "completion", "label"},  # KTOTrainer
    "rl_steps": {
        "episode_id",
        "step",
        "observation",
        "action",
        "reward",
        "discount",
        "is_first",
        "is_last",
        "is_terminal",
    },
    "decisions": {
        "context",
        "ambient_state",
        "coordination_state",
        "action",
        "confidence",
        "outcome_reward",
    },
    "stepwise": {"prompt", "completions", "labels"},  # PRMTrainer, stepwise supervision
}
COMMON = {"split", "episode_id", "group_id", "source", "prompt_hash"}


@pytest.fixture(scope="module")
def demo_datasets(demo_warehouse) -> dict[str, pl.DataFrame]:
    layout = Layout(demo_warehouse)
    silver = {t: stored.read(layout, "silver", t) for t in SILVER_MODELS}
    gold = {
        t: stored.read(layout, "gold", t) for t in GOLD_MODELS if stored.exists(layout, "gold", t)
    }
    splits = assign_splits(
        silver["episodes"]["group_id"], SplitConfig(ratios={"train": 0.5, "test": 0.5})
    )
    return build_datasets(silver, gold, splits)


@pytest.mark.parametrize("name", DATASETS)
def test_dataset_loads_with_hf_datasets_and_has_its_trainer_columns(demo_datasets, tmp_path, name):
    from datasets import load_dataset

    frame = demo_datasets[name]
    assert frame.height > 0, f"{name} is empty on the demo data"
    files = {}
    for split, part in frame.partition_by("split", as_dict=True).items():
        files[split[0]] = str(tmp_path / f"{split[0]}.parquet")
        part.write_parquet(files[split[0]])
    loaded = load_dataset("parquet", data_files=files)
    assert set(loaded) == set(files)
    for split, ds in loaded.items():
        assert (TRAINER_COLUMNS[name] | COMMON) <= set(ds.column_names)
        assert ds.num_rows == frame.filter(pl.col("split") == split).height
    row = next(iter(loaded.values()))[0]
    if name == "stepwise":  # TRL's standard format: plain text, one bool label per step
        assert isinstance(row["prompt"], str) and row["completions"]
        assert all(isinstance(c, str) and c for c in row["completions"])
        assert [type(label) for label in row["labels"]] == [bool] * len(row["completions"])
        return
    for column in TRAINER_COLUMNS[name] & {
        "messages",
        "prompt",
        "chosen",
        "rejected",
        "completion",
    }:
        assert row[column] and set(row[column][0]) == {"role", "content"}, column
    if name == "kto":
        assert isinstance(row["label"], bool)


def test_every_dataset_row_has_a_split_group_and_64_hex_prompt_hash(demo_datasets):
    for name, frame in demo_datasets.items():
        nulls = frame.select(pl.col("split", "group_id", "source", "episode_id").null_count())
        assert sum(nulls.row(0)) == 0, name
        assert frame["prompt_hash"].str.contains(r"^[0-9a-f]{64}$").all(), name


def test_rl_steps_rlds_invariants_hold_on_demo_data(demo_datasets):
    steps = demo_datasets["rl_steps"]
    per_episode = steps.group_by("episode_id").agg(
        firsts=pl.col("is_first").sum(),
        lasts=pl.col("is_last").sum(),
        n=pl.len(),
        contiguous=(pl.col("step").sort() == pl.int_range(pl.len())).all(),
        first_is_0=pl.col("is_first").filter(pl.col("step") == 0).all(),
        last_is_max=pl.col("is_last").filter(pl.col("step") == pl.col("step").max()).all(),
        terminal_only_last=(pl.col("is_terminal") & ~pl.col("is_last")).sum() == 0,
        splits=pl.col("split").n_unique(),
    )
    assert (per_episode["firsts"] == 1).all() and (per_episode["lasts"] == 1).all()
    assert (
        per_episode["contiguous"].all()
        and per_episode["first_is_0"].all()
        and per_episode["last_is_max"].all()
    )
    assert per_episode["terminal_only_last"].all()
    assert (per_episode["splits"] == 1).all()  # an RL episode never straddles splits
    # is_terminal only on a real end: study agreement / refusal; everything else is truncated
    terminal = steps.filter(pl.col("is_terminal"))
    assert set(terminal["source"]) <= {"study"} and terminal.height > 0
    assert steps.filter(pl.col("source") == "social_rl")["episode_id"].str.contains("@").all()


def test_the_demo_release_passes_every_trainability_check(demo_warehouse):
    """The release the demo build published (its blocking check passed, or the build would have
    failed): its own files, read back, have no trainability problem and every kind of chat row is
    present."""
    exports = Layout(demo_warehouse).exports
    release = exports / latest_release(exports)
    assert trainability_problems(release) == []
    for name in ("sft", "kto", "preference", "rl_steps", "stepwise"):
        assert list((release / name).glob("*.parquet")), name


def test_the_demo_release_holds_stepwise_train_examples_of_both_sources_and_both_labels(
    demo_warehouse,
):
    exports = Layout(demo_warehouse).exports
    release = exports / latest_release(exports)
    train = pl.read_parquet(release / "stepwise" / "train-*.parquet")
    assert train.height > 0
    assert set(train["source"]) == {"study", "social_rl"}
    assert set(train["labels"].explode()) == {True, False}
    assert set(train["label_rule"]) == {"stepwise_label@1"}
