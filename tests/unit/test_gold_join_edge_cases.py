"""The issue's join edge cases, end to end: real dialogue fixtures → adapter → silver → gold rule.

Documented outcomes (docs/rewards.md, "Join edge cases"): silver quarantines orphans, out-of-range
or negative indexes and bad values, stores a re-delivered event once and applies each dataset's
turn_index base; gold rewards only assistant turns and averages several events on one turn.
"""

import polars as pl
import pytest

from pipelines.gold.rules import run_rule
from tests.unit._gold_helpers import FIXTURES, params, source_silver


@pytest.fixture(scope="module")
def clean():
    silver = source_silver("dialogue", FIXTURES / "clean")
    return silver, run_rule("dialogue_feedback@1", silver, params())


@pytest.fixture(scope="module")
def dirty():
    silver = source_silver("dialogue", FIXTURES / "dirty")
    return silver, run_rule("dialogue_feedback@1", silver, params())


def _reward(rewards: pl.DataFrame, target_id: str) -> dict:
    rows = rewards.filter(pl.col("target_id") == target_id)
    assert rows.height == 1, f"expected one reward row for {target_id}"
    return rows.row(0, named=True)


def test_unknown_conversation_is_quarantined_as_orphan_and_never_rewarded(dirty):
    silver, rewards = dirty
    assert silver["quarantine"].filter(pl.col("error_kind") == "orphan").height == 2
    assert rewards.filter(pl.col("episode_id").str.contains("nope")).height == 0


def test_out_of_range_negative_index_and_bad_values_are_quarantined_as_bad_value(dirty):
    silver, rewards = dirty
    bad = silver["quarantine"].filter(pl.col("error_kind") == "bad_value")
    assert bad["locator"].str.extract(r"line (\d+)").cast(pl.Int64).sort().to_list() == [
        10,
        11,
        12,
        13,
    ]
    # Only the surviving event e-1 (latest copy: rating -1 on turn 1) is rewarded.
    assert (
        rewards["target_id"].to_list() == ["dialogue:support/d-1#1"]
        and rewards["reward"][0] == -0.8
    )


def test_same_event_delivered_twice_counts_once_by_id_and_by_content(clean):
    _, rewards = clean
    by_id = _reward(
        rewards, "dialogue:support/c-100#3"
    )  # ev-1 twice (same id) + ev-2 (rating 1, reward 0.6)
    assert by_id["n_signals"] == 2 and by_id["reward"] == pytest.approx((0.8 + 0.6) / 2)
    assert by_id["aggregation"] == "mean"
    by_content = _reward(rewards, "dialogue:support/c-101#2")  # identical event without id, twice
    assert by_content["n_signals"] == 1 and by_content["reward"] == -0.8


def test_one_based_dataset_turn_index_is_shifted_by_its_configured_base(clean):
    _, rewards = clean
    # tutoring counts from 1 (turnlake.toml): turn_index 4 → turns[3], the tutor's second reply.
    assert _reward(rewards, "dialogue:tutoring/t-1#3")["reward"] == 1.0
    assert _reward(rewards, "dialogue:tutoring/t-2#1")["reward"] == 0.8


def test_every_reward_targets_an_assistant_turn_or_the_episode(clean):
    silver, rewards = clean
    roles = rewards.join(silver["turns"].select("turn_id", "role"), on="turn_id", how="left")
    assert set(roles.filter(pl.col("target") == "turn")["role"]) == {"assistant"}
