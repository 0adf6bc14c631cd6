"""Conformance: the dialogue source (DESIGN §1 `dialogue`, §3 dialogue bullet), on hand-written
raw files.

Each expected value is written out by hand from the rule; nothing here calls the code under test
to compute what it should produce.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from tests.conformance.harness import ALL_TRAIN, run_pipeline, write_jsonl

CONVERSATION = {
    "conversation_id": "c1",
    "turns": [
        {"role": "user", "content": "Where is my parcel?"},  # index 0
        {"role": "assistant", "content": "It left the depot this morning."},  # index 1
        {"role": "user", "content": "Thanks, and when does it arrive?"},  # index 2
        {"role": "assistant", "content": "Tomorrow before noon."},  # index 3
    ],
}


def build(
    tmp_path: Path,
    events: list[dict],
    *,
    dataset: str = "shop",
    config: str = ALL_TRAIN,
    conversations: list[dict] | None = None,
):
    raw = tmp_path / "raw"
    write_jsonl(
        raw / "dialogues" / dataset / "conversations.jsonl", conversations or [CONVERSATION]
    )
    write_jsonl(raw / "feedback" / dataset / "events.jsonl", events)
    return run_pipeline(raw, tmp_path / "data", config=config)


def rewards(built) -> dict[str, float]:
    rows = built.gold["turn_rewards"].filter(
        pl.col("reward_rule").str.starts_with("dialogue_feedback@")
    )
    return dict(zip(rows["target_id"], rows["reward"], strict=True))


def test_explicit_reward_wins_over_the_rating(tmp_path):
    built = build(
        tmp_path,
        [{"event_id": "e1", "conversation_id": "c1", "turn_index": 1, "rating": -1, "reward": 0.3}],
    )
    assert rewards(built) == {"dialogue:shop/c1#1": 0.3}  # the labeller's own number, not -0.8


@pytest.mark.parametrize(("rating", "expected"), [(1, 0.8), (0, 0.0), (-1, -0.8)])
def test_thumbs_rating_maps_to_plus_minus_point_eight(tmp_path, rating, expected):
    built = build(
        tmp_path, [{"event_id": "e1", "conversation_id": "c1", "turn_index": 3, "rating": rating}]
    )
    assert rewards(built) == {"dialogue:shop/c1#3": expected}


def test_feedback_on_a_user_turn_is_kept_but_not_rewarded(tmp_path):
    built = build(
        tmp_path, [{"event_id": "e1", "conversation_id": "c1", "turn_index": 2, "rating": 1}]
    )
    assert rewards(built) == {}
    kept = built.silver["feedback"].filter(pl.col("turn_id") == "dialogue:shop/c1#2")
    assert kept.select("name", "value_num").rows() == [("rating", 1.0)]


def test_one_based_dataset_points_at_the_turn_it_counts(tmp_path):
    # `[dialogue.turn_index_base] shop = 1`: event turn_index 2 is turns[1], the first assistant
    # reply.
    config = ALL_TRAIN + "[dialogue.turn_index_base]\nshop = 1\n"
    built = build(
        tmp_path,
        [{"event_id": "e1", "conversation_id": "c1", "turn_index": 2, "rating": 1}],
        config=config,
    )
    assert rewards(built) == {"dialogue:shop/c1#1": 0.8}


def test_event_for_an_unknown_conversation_is_quarantined_as_orphan(tmp_path):
    built = build(
        tmp_path, [{"event_id": "e1", "conversation_id": "nope", "turn_index": 1, "rating": 1}]
    )
    assert rewards(built) == {}
    assert built.silver["quarantine"]["error_kind"].to_list() == ["orphan"]


def test_event_for_an_out_of_range_turn_is_quarantined(tmp_path):
    built = build(
        tmp_path, [{"event_id": "e1", "conversation_id": "c1", "turn_index": 4, "rating": 1}]
    )
    assert rewards(built) == {}
    assert built.silver["quarantine"]["error_kind"].to_list() == ["bad_value"]


def test_non_numeric_rating_is_quarantined_not_guessed(tmp_path):
    built = build(
        tmp_path, [{"event_id": "e1", "conversation_id": "c1", "turn_index": 1, "rating": "great"}]
    )
    assert rewards(built) == {}
    assert built.silver["quarantine"].select("error_kind").rows() == [("bad_value",)]
    assert "great" in built.silver["quarantine"]["message"][0]


def test_repeated_events_for_one_turn_are_aggregated_by_mean(tmp_path):
    # Two raters on turn 3: +1 → 0.8 and -1 → -0.8; the mean of the two signals is 0.0.
    built = build(
        tmp_path,
        [
            {"event_id": "e1", "conversation_id": "c1", "turn_index": 3, "rating": 1},
            {"event_id": "e2", "conversation_id": "c1", "turn_index": 3, "rating": -1},
        ],
    )
    row = built.gold["turn_rewards"].filter(pl.col("target_id") == "dialogue:shop/c1#3")
    assert row.select("reward", "n_signals").rows() == [(0.0, 2)]


def test_the_same_event_delivered_twice_counts_once(tmp_path):
    event = {"event_id": "e1", "conversation_id": "c1", "turn_index": 1, "rating": -1}
    built = build(tmp_path, [event, event])
    row = built.gold["turn_rewards"].filter(pl.col("target_id") == "dialogue:shop/c1#1")
    assert row.select("reward", "n_signals").rows() == [(-0.8, 1)]


def test_turn_index_is_zero_based_in_source_order(tmp_path):
    built = build(tmp_path, [])
    turns = built.silver["turns"].sort("turn_index")
    assert turns.select("turn_index", "role", "text").rows() == [
        (0, "user", "Where is my parcel?"),
        (1, "assistant", "It left the depot this morning."),
        (2, "user", "Thanks, and when does it arrive?"),
        (3, "assistant", "Tomorrow before noon."),
    ]


def test_conversations_sharing_a_rater_are_one_split_group(tmp_path):
    # A human rater is a participant: two conversations rated by u-1 must never straddle splits.
    second = {"conversation_id": "c2", "turns": CONVERSATION["turns"][:2]}
    built = build(
        tmp_path,
        [
            {
                "event_id": "e1",
                "conversation_id": "c1",
                "turn_index": 1,
                "rating": 1,
                "user_id": "u-1",
            },
            {
                "event_id": "e2",
                "conversation_id": "c2",
                "turn_index": 1,
                "rating": 1,
                "user_id": "u-1",
            },
        ],
        conversations=[CONVERSATION, second],
    )
    groups = built.silver["episodes"].sort("episode_id")["group_id"].to_list()
    assert len(set(groups)) == 1


def test_a_positively_rated_reply_is_a_desirable_kto_example(tmp_path):
    built = build(
        tmp_path, [{"event_id": "e1", "conversation_id": "c1", "turn_index": 1, "rating": 1}]
    )
    kto = built.datasets["kto"]
    assert kto.select("reward", "label").rows() == [(0.8, True)]
    assert kto["completion"][0].to_list() == [
        {"role": "assistant", "content": "It left the depot this morning."}
    ]
