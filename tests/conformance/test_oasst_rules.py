"""Conformance: the oasst source (issue 17 item 5), on a hand-written message tree and on the real
OpenAssistant sample. Expected values are written out by hand from the rules in
pipelines/transforms/oasst, pipelines/gold/rules/oasst.py and pipelines/exports/datasets/trees.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from tests.conformance.harness import ALL_TRAIN, run_pipeline, write_jsonl

REAL = Path(__file__).resolve().parents[3] / "shared" / "real_samples" / "oasst"


def node(mid: str, role: str, text: str, *replies: dict, **fields) -> dict:
    base = {"message_id": mid, "text": text, "role": role, "review_result": True, "deleted": False}
    return base | {"synthetic": False, "replies": list(replies)} | fields


# p ── a (rank 0, quality 0.75) ── q ── r (+1, -1, _skip_reply ×2)
#   ├─ b (rank 1, +1 ×1, -1 ×3)
#   ├─ c (rank 2, deleted) ── d
#   └─ e (rank 3, review_result false)
TREE = {
    "message_tree_id": "p",
    "tree_state": "ready_for_export",
    "prompt": node(
        "p",
        "prompter",
        "How do I boil an egg?",
        node(
            "a",
            "assistant",
            "Simmer it for nine minutes.",
            node(
                "q",
                "prompter",
                "And for a soft yolk?",
                node("r", "assistant", "Six minutes.", emojis={"+1": 1, "-1": 1, "_skip_reply": 2}),
            ),
            rank=0,
            emojis={"+1": 3},
            labels={"quality": {"value": 0.75, "count": 2}},
        ),
        node("b", "assistant", "Microwave it.", rank=1, emojis={"+1": 1, "-1": 3}),
        node("c", "assistant", "Ask someone.", node("d", "prompter", "Who?"), rank=2, deleted=True),
        node("e", "assistant", "Buy boiled eggs.", rank=3, review_result=False),
    ),
}
P, A, Q, R, B = (f"oasst:p#{i}" for i in range(5))


def build(tmp_path: Path, tree: dict = TREE, config: str = ALL_TRAIN):
    raw = tmp_path / "raw"
    write_jsonl(raw / "oasst" / "en" / "trees.jsonl", [tree])
    return run_pipeline(raw, tmp_path / "data", config=config)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return build(tmp_path_factory.mktemp("oasst"))


def test_turns_keep_their_parent_in_preorder_without_excluded_messages(built):
    turns = built.silver["turns"].sort("turn_index")
    assert turns.select("turn_id", "parent_turn_id", "role", "text").rows() == [
        (P, None, "user", "How do I boil an egg?"),
        (A, P, "assistant", "Simmer it for nine minutes."),
        (Q, A, "user", "And for a soft yolk?"),
        (R, Q, "assistant", "Six minutes."),
        (B, P, "assistant", "Microwave it."),
    ]


def test_the_episode_counts_what_it_left_out_by_reason(built):
    episode = built.silver["episodes"].row(0, named=True)
    assert (episode["episode_id"], episode["group_id"], episode["n_turns"]) == (
        "oasst:p",
        "oasst:p",
        5,
    )
    excluded = json.loads(episode["attributes"])["excluded"]
    assert excluded == {"deleted": 1, "unreviewed": 1, "synthetic": 0, "below_excluded": 1}


def test_quality_label_wins_else_emojis_vote(built):
    rewards = built.gold["turn_rewards"].select("target_id", "reward").sort("target_id").rows()
    assert rewards == [(A, 0.5), (R, 0.0), (B, -0.5)]  # 2·0.75−1; (1−1)/2; (1−3)/4


def test_sibling_ranks_give_the_better_ranked_reply_as_chosen(built):
    pairs = built.datasets["preference"]
    assert pairs.select("pair_kind", "chosen_turn_id", "rejected_turn_id").rows() == [
        ("sibling_rank", A, B)
    ]
    row = pairs.row(0, named=True)
    assert row["prompt"] == [{"role": "user", "content": "How do I boil an egg?"}]
    assert row["chosen"][0]["content"] == "Simmer it for nine minutes."
    assert (row["reward_chosen"], row["reward_rejected"]) == (0.5, -0.5)


def test_sft_follows_the_best_ranked_path(built):
    sft = built.datasets["sft"].sort("turn_id")
    assert sft["turn_id"].to_list() == [A, R]
    assert [m["content"] for m in sft["messages"][1]] == [
        "How do I boil an egg?",
        "Simmer it for nine minutes.",
        "And for a soft yolk?",
        "Six minutes.",
    ]


def test_include_deleted_makes_the_deleted_reply_and_its_reply_turns(tmp_path):
    built = build(tmp_path, config=ALL_TRAIN + "[oasst]\ninclude_deleted = true\n")
    texts = set(built.silver["turns"]["text"])
    assert {"Ask someone.", "Who?"} <= texts and "Buy boiled eggs." not in texts
    pairs = built.datasets["preference"].select("chosen", "rejected").rows()
    contents = {(c[0]["content"], r[0]["content"]) for c, r in pairs}
    assert ("Microwave it.", "Ask someone.") in contents and len(contents) == 3


def test_a_ranking_the_rewards_contradict_makes_no_pair(tmp_path):
    tree = json.loads(json.dumps(TREE))
    tree["prompt"]["replies"][1]["labels"] = {"quality": {"value": 1.0, "count": 1}}
    built = build(tmp_path, tree)
    assert built.datasets.get("preference", pl.DataFrame()).height == 0


# ---------------------------------------------------------------- the real sample


def _real_messages() -> list[tuple[str, str | None, dict, bool]]:
    """(message_id, parent id, node, excluded by default) for every node of the real sample."""
    out = []
    for line in (REAL / "en_trees_sample.jsonl").read_text().splitlines():
        stack = [(json.loads(line)["prompt"], None, False)]
        while stack:
            msg, parent, above = stack.pop()
            own = msg["deleted"] or msg["review_result"] is not True or msg["synthetic"]
            out.append((msg["message_id"], parent, msg, own or above))
            stack += [(r, msg["message_id"], own or above) for r in msg.get("replies", [])]
    return out


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    if not REAL.exists():
        pytest.skip("../shared/real_samples is absent")
    raw = tmp_path_factory.mktemp("real") / "raw"
    (raw / "oasst").mkdir(parents=True)
    (raw / "oasst" / "en_trees_sample.jsonl").write_bytes(
        (REAL / "en_trees_sample.jsonl").read_bytes()
    )
    return run_pipeline(raw, raw.parent / "data")


def _message_ids(turns: pl.DataFrame) -> pl.DataFrame:
    return turns.with_columns(message_id=pl.col("attributes").str.json_path_match("$.message_id"))


def test_real_sample_loses_nothing_every_message_is_a_turn_or_counted(real):
    messages = _real_messages()
    episodes = real.silver["episodes"]
    excluded = sum(sum(json.loads(a)["excluded"].values()) for a in episodes["attributes"])
    assert episodes.height == 15 and real.silver["quarantine"].height == 0
    assert real.silver["turns"].height == sum(not m[3] for m in messages)
    assert real.silver["turns"].height + excluded == len(messages) == 151


def test_real_sample_trees_keep_their_branches(real):
    turns = _message_ids(real.silver["turns"])
    by_turn = dict(zip(turns["turn_id"], turns["message_id"], strict=True))
    got = {(m, by_turn.get(p)) for m, p in zip(turns["message_id"], turns["parent_turn_id"])}
    assert got == {(m, parent) for m, parent, _, gone in _real_messages() if not gone}
    assert turns["parent_turn_id"].value_counts()["count"].max() >= 2  # a message with replies


def _vote(msg: dict) -> float | None:
    values = {"+1": 1.0, "-1": -1.0, "red_flag": -1.0}
    counted = {k: n for k, n in (msg.get("emojis") or {}).items() if k in values and n}
    return (
        sum(values[k] * n for k, n in counted.items()) / sum(counted.values()) if counted else None
    )


def test_real_sample_sibling_rank_pairs_appear_in_preference(real):
    kept = [(m, p, msg) for m, p, msg, gone in _real_messages() if not gone]
    expected = set()
    for m1, p1, x in kept:
        for m2, p2, y in kept:
            if p1 == p2 and x["role"] == y["role"] == "assistant" and x["text"] != y["text"]:
                ranked = x.get("rank") is not None and y.get("rank") is not None
                contradicted = (_vote(x) or 0) < (_vote(y) or 0) and None not in (
                    _vote(x),
                    _vote(y),
                )
                if ranked and x["rank"] < y["rank"] and not contradicted:
                    expected.add((m1, m2))
    turns = _message_ids(real.silver["turns"])
    by_turn = dict(zip(turns["turn_id"], turns["message_id"], strict=True))
    pairs = real.datasets["preference"].filter(pl.col("pair_kind") == "sibling_rank")
    got = {
        (by_turn[c], by_turn[r])
        for c, r in pairs.select("chosen_turn_id", "rejected_turn_id").rows()
    }
    assert len(expected) > 10 and got == expected
