"""Splits built from the demo warehouse (built once, through the CLI, with every blocking check)."""

from __future__ import annotations

import polars as pl
import pytest

from pipelines.cli.main import main
from pipelines.config.splits import SplitConfig
from pipelines.schemas.gold import Splits
from pipelines.splits.assign import (
    assign_splits,
    human_participants,
    proof_problems,
    split_proof,
    stored_near_duplicates,
)
from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout

SILVER = ("episodes", "turns", "decisions", "feedback")


@pytest.fixture(scope="module")
def demo_layout(demo_warehouse):
    return Layout(demo_warehouse)


def test_demo_splits_have_one_row_per_silver_group_and_satisfy_the_contract(demo_layout):
    splits = Splits.validate(stored.read(demo_layout, "gold", "splits"), lazy=True)
    groups = stored.read(demo_layout, "silver", "episodes")["group_id"].unique().sort()
    assert splits["group_id"].sort().to_list() == groups.to_list()
    assert set(splits["split"]) == {"train", "test"}


def test_demo_split_proof_finds_no_leak_and_covers_every_kind_of_human(demo_layout):
    silver = {t: stored.read(demo_layout, "silver", t) for t in SILVER}
    proof = split_proof(stored.read(demo_layout, "gold", "splits"), silver, {}, SplitConfig())
    assert proof_problems(proof) == []
    assert set(proof["participant_kinds"]) == {"turn_user", "decision_human", "feedback_rater"}


def test_demo_decision_humans_would_straddle_with_one_group_per_session(demo_layout):
    """Why decision groups link sessions: with one group per session, the demo's humans straddle."""
    silver = {t: stored.read(demo_layout, "silver", t) for t in SILVER}
    per_session = silver["episodes"].with_columns(
        group_id=pl.when(pl.col("source") == "decision").then("episode_id").otherwise("group_id")
    )
    silver["episodes"] = per_session
    proof = split_proof(assign_splits(per_session["group_id"], SplitConfig()), silver, {})
    assert proof["overlaps"]["participants"]["count"] > 0
    assert human_participants(silver).filter(pl.col("kind") == "decision_human").height > 0


def test_demo_splits_view_is_queryable(demo_layout):
    assert (
        main(
            [
                "sql",
                "--data-root",
                str(demo_layout.data_root),
                "SELECT split, count(*) AS n FROM splits GROUP BY split",
            ]
        )
        == 0
    )


def test_demo_near_duplicate_prompts_share_a_split_and_would_straddle_per_group(demo_layout):
    """The demo's dialogue and oasst prompts repeat with other punctuation or wording: every
    cluster is in one split, which splitting by group alone would break."""
    silver = {t: stored.read(demo_layout, "silver", t) for t in SILVER}
    near = stored_near_duplicates(demo_layout, SplitConfig())
    splits = stored.read(demo_layout, "gold", "splits")
    proof = split_proof(splits, silver, {}, SplitConfig(), near_duplicates=near)
    assert proof["overlaps"]["near_duplicates"]["count"] == 0
    assert (
        proof["near_duplicate_clusters"]["episodes"] > proof["near_duplicate_clusters"]["clusters"]
    )
    per_group = assign_splits(silver["episodes"]["group_id"], SplitConfig())
    apart = split_proof(per_group, silver, {}, SplitConfig(), near_duplicates=near)
    assert apart["overlaps"]["near_duplicates"]["count"] > 0
