"""Realized split shares per source, and the warning when whole groups move them far from the
configured ratios (pipelines/splits/balance.py, the saved query `split_balance`)."""

import duckdb
import polars as pl
import pytest

from pipelines.splits.balance import BALANCE_SCHEMA, balance_warnings
from pipelines.warehouse.queries import saved_queries


def _balance(episodes: pl.DataFrame, splits: pl.DataFrame) -> pl.DataFrame:
    con = duckdb.connect()
    con.register("episodes", episodes)
    con.register("splits", splits)
    frame = con.sql(saved_queries()["split_balance"].sql).pl()
    con.close()
    return frame.cast(BALANCE_SCHEMA)


@pytest.fixture
def linked_source() -> tuple[pl.DataFrame, pl.DataFrame]:
    """Source `chat`: group g1 (7 conversations linked by shared raters) in train, g2, g3, g4
    (one conversation each) in test, g5 (one) in train. Source `solo`: 2 singletons."""
    groups = ["g1"] * 7 + ["g2", "g3", "g4", "g5"]
    episodes = pl.DataFrame(
        {
            "episode_id": [f"c{i}" for i in range(11)] + ["s1", "s2"],
            "group_id": groups + ["h1", "h2"],
            "source": ["chat"] * 11 + ["solo"] * 2,
        }
    )
    splits = pl.DataFrame(
        {
            "group_id": ["g1", "g2", "g3", "g4", "g5", "h1", "h2"],
            "split": ["train", "test", "test", "test", "train", "train", "test"],
        }
    )
    return episodes, splits


def test_balance_counts_episodes_per_source_and_split_and_names_the_largest_group(linked_source):
    balance = _balance(*linked_source)
    chat = balance.filter(pl.col("source") == "chat").sort("split")
    # by hand: test = g2, g3, g4 = 3 of 11 episodes; train = g1 (7) + g5 (1) = 8 of 11
    assert chat["split"].to_list() == ["test", "train"]
    assert chat["episodes"].to_list() == [3, 8]
    assert chat["groups"].to_list() == [3, 2]
    assert chat["share"].to_list() == [round(3 / 11, 4), round(8 / 11, 4)]
    assert set(chat["largest_group"]) == {"g1"}
    assert set(chat["largest_group_episodes"]) == {7}
    assert set(chat["largest_group_share"]) == {round(7 / 11, 4)}
    assert set(chat["largest_group_split"]) == {"train"}


def test_a_group_without_a_split_is_counted_as_unassigned(linked_source):
    episodes, splits = linked_source
    balance = _balance(episodes, splits.filter(pl.col("group_id") != "h2"))
    solo = balance.filter(pl.col("source") == "solo").sort("split")
    assert solo["split"].to_list() == ["(unassigned)", "train"]


def test_warning_names_the_split_off_its_ratio_and_the_group_that_holds_the_source():
    balance = pl.DataFrame(
        {
            "source": ["chat", "chat", "even", "even"],
            "split": ["test", "train", "test", "train"],
            "episodes": [5, 95, 19, 81],
            "share": [0.05, 0.95, 0.19, 0.81],
            "groups": [5, 10, 19, 81],
            "largest_group": ["g1", "g1", "e1", "e1"],
            "largest_group_episodes": [70, 70, 1, 1],
            "largest_group_share": [0.7, 0.7, 0.01, 0.01],
            "largest_group_split": ["train", "train", "test", "test"],
        },
        schema=BALANCE_SCHEMA,
    )
    warnings = balance_warnings(balance, {"train": 0.8, "test": 0.2}, min_episodes=50)
    # chat: test 5 % is off 20 % by 15 points > half of 20 %; train 95 % is off by 15 < 40
    expected = (
        "chat: test 5.0% (configured 20%) of 100 episodes; its largest group `g1` holds 70.0% "
        "(train): units linked by a shared person stay in one split"
    )
    assert warnings == [expected]


def test_no_warning_for_a_small_source_or_a_split_within_tolerance():
    balance = pl.DataFrame(
        {
            "source": ["tiny", "ok"],
            "split": ["train", "train"],
            "episodes": [10, 60],
            "share": [1.0, 0.88],
            "groups": [1, 60],
            "largest_group": ["t", "o"],
            "largest_group_episodes": [10, 1],
            "largest_group_share": [1.0, 0.02],
            "largest_group_split": ["train", "train"],
        },
        schema=BALANCE_SCHEMA,
    )
    # tiny: 10 episodes < 50; ok: train 88 % is within 40 % of 80 %, but no test row at all:
    # test 0 % is off 20 % by more than 10 %
    assert balance_warnings(balance, {"train": 0.8, "test": 0.2}) == [
        "ok: test 0.0% (configured 20%) of 60 episodes"
    ]
