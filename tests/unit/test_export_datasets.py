"""Dataset builders on tiny hand-built frames: what goes in each dataset, and the columns TRL
expects."""

from __future__ import annotations

import hashlib

import orjson
import polars as pl
import pytest

from pipelines.exports.datasets import build_datasets
from pipelines.exports.datasets.common import MESSAGES, DatasetOptions, rewards_by
from tests.unit._export_helpers import all_train, context, episode, reward, tables, turn

D = "dialogue:d/1"


def _dialogue() -> tuple[dict, dict]:
    return tables(
        gold={
            "turn_rewards": [
                reward("turn", f"{D}#2", D, 0.8, "dialogue_feedback@1", turn_id=f"{D}#2")
            ]
        },
        episodes=[episode(D, "dialogue")],
        turns=[
            turn(D, 0, "system", "be brief"),
            turn(D, 1, "user", "hi"),
            turn(D, 2, "assistant", "hello"),
            turn(D, 3, "user", "bye"),
            turn(D, 4, "assistant", ""),
        ],
    )


def test_sft_prefix_ends_in_the_assistant_turn_and_carries_its_reward():
    silver, gold = _dialogue()
    sft = build_datasets(silver, gold, all_train(silver))["sft"]
    assert sft.schema["messages"] == MESSAGES
    assert sft.height == 1  # the empty assistant turn at index 4 is not an example
    row = sft.row(0, named=True)
    assert [m["role"] for m in row["messages"]] == ["system", "user", "assistant"]
    assert row["messages"][-1]["content"] == "hello"
    assert (row["reward"], row["reward_rule"], row["feedback_ids"]) == (
        0.8,
        "dialogue_feedback@1",
        [f"fb-{D}#2"],
    )
    assert (row["split"], row["group_id"], row["source"]) == ("train", D, "dialogue")


def test_prompt_hash_is_sha256_of_the_prompt_messages_json():
    silver, gold = _dialogue()
    ds = build_datasets(silver, gold, all_train(silver))
    prompt = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
    expected = hashlib.sha256(orjson.dumps(prompt)).hexdigest()
    assert ds["sft"]["prompt_hash"].to_list() == [expected]
    assert ds["kto"]["prompt_hash"].to_list() == [
        expected
    ]  # same prompt, same hash across datasets


def _kto_with_reward(value: float, options: DatasetOptions | None = None) -> pl.DataFrame:
    silver, gold = _dialogue()
    gold["turn_rewards"] = gold["turn_rewards"].with_columns(reward=pl.lit(value))
    return build_datasets(silver, gold, all_train(silver), options)["kto"]


def test_kto_label_is_the_sign_of_the_reward():
    assert _kto_with_reward(0.8)["label"].to_list() == [True]
    assert _kto_with_reward(-0.8)["label"].to_list() == [False]
    assert _kto_with_reward(-0.8)["completion"][0].to_list() == [
        {"role": "assistant", "content": "hello"}
    ]


def test_kto_leaves_out_reward_zero_unless_neutral_rows_are_asked_for():
    """Was: a reward of 0 shipped as label false (undesirable)."""
    left_out: dict = {}
    silver, gold = _dialogue()
    gold["turn_rewards"] = gold["turn_rewards"].with_columns(reward=pl.lit(0.0))
    assert build_datasets(silver, gold, all_train(silver), left_out=left_out)["kto"].height == 0
    assert left_out["kto"]["neutral_reward"] == 1
    assert _kto_with_reward(0.0, DatasetOptions(kto_include_neutral=True))["label"].to_list() == [
        False
    ]


def test_sft_leaves_out_a_negatively_rewarded_final_turn_unless_asked_for():
    silver, gold = _dialogue()
    gold["turn_rewards"] = gold["turn_rewards"].with_columns(reward=pl.lit(-0.8))
    assert build_datasets(silver, gold, all_train(silver))["sft"].height == 0
    kept = build_datasets(
        silver, gold, all_train(silver), DatasetOptions(sft_include_negative=True)
    )["sft"]
    assert kept["reward"].to_list() == [-0.8]


def test_group_without_a_split_row_is_left_out():
    silver, gold = _dialogue()
    ds = build_datasets(silver, gold, all_train(silver).filter(pl.col("group_id") != D))
    assert all(frame.height == 0 for frame in ds.values())


def test_social_rl_internal_coach_messages_never_reach_another_agents_prompt():
    e = "social_rl:run/round1"
    silver, gold = tables(
        episodes=[
            episode(e, "social_rl", "experiment:x", attributes='{"run_dir":"run","round_number":1}')
        ],
        turns=[
            turn(e, 0, "agent", "roads first", "A"),
            turn(e, 1, "agent", "SECRET coach note", "Coach", True),
            turn(e, 2, "agent", "buses first", "B"),
        ],
    )
    ds = build_datasets(silver, gold, all_train(silver))
    texts = [m["content"] for msgs in ds["sft"]["messages"].to_list() for m in msgs]
    assert not any("SECRET" in t for t in texts)
    assert not ds["rl_steps"]["observation"].str.contains("SECRET").any()
    (row,) = ds["sft"].to_dicts()
    assert row["messages"] == [
        {"role": "user", "content": "A: roads first"},
        {"role": "assistant", "content": "buses first"},
    ]


CORRECTION = (
    '{"interaction_type":"user_correction","source_correction":true,'
    '"corrects_turn_id":"scenario:S1#1"}'
)
REVISION = '{"interaction_type":"checkpoint","revises_turn_id":"scenario:S1#1"}'


def _correction_tables(
    revision: bool, rewards: tuple[float, float] | None = None
) -> tuple[dict, dict]:
    s = "scenario:S1"
    gold = (
        {
            "turn_rewards": [
                reward("turn", f"{s}#{i}", s, value, "scenario_outcome@2", turn_id=f"{s}#{i}")
                for i, value in zip((1, 4), rewards, strict=True)
            ]
        }
        if rewards
        else None
    )
    return tables(
        gold=gold,
        episodes=[episode(s, "scenario", "S1")],
        turns=[
            turn(s, 0, "user", "plan my year"),
            turn(s, 1, "assistant", "revenue is 488M"),
            turn(s, 2, "user", "Actually, it is 867M", attributes=CORRECTION),
            turn(s, 3, "assistant", "Noted, re-running the round."),
            turn(s, 4, "assistant", "revenue is 867M", attributes=REVISION if revision else None),
        ],
    )


def test_correction_pair_rejects_the_corrected_answer_and_chooses_its_revision():
    # Changed with issue 13: the chosen answer is the moderator's revision of the corrected answer
    # (silver `revises_turn_id`), not the next moderator turn (#3 here, which only acknowledges the
    # correction).
    silver, gold = _correction_tables(revision=True, rewards=(-0.5, 0.6))
    (row,) = build_datasets(silver, gold, all_train(silver))["preference"].to_dicts()
    assert row["pair_kind"] == "correction"
    assert row["prompt"] == [{"role": "user", "content": "plan my year"}]
    assert row["rejected"] == [{"role": "assistant", "content": "revenue is 488M"}]
    assert row["chosen"] == [{"role": "assistant", "content": "revenue is 867M"}]
    assert row["evidence_turn_ids"] == ["scenario:S1#2"]
    assert (row["reward_chosen"], row["reward_rejected"]) == (0.6, -0.5)


def test_correction_without_a_revised_answer_makes_no_pair():
    silver, gold = _correction_tables(revision=False)
    assert build_datasets(silver, gold, all_train(silver))["preference"].height == 0


def test_correction_pair_whose_revision_is_rewarded_lower_is_dropped():
    silver, gold = _correction_tables(revision=True, rewards=(0.6, -0.5))
    assert build_datasets(silver, gold, all_train(silver))["preference"].height == 0


def _decision_tables(followed: bool | None, value: float = 0.5) -> tuple[dict, dict]:
    e = "decision:s1"
    ctx = context(
        {
            "ambient_state": {"temperature": 0.1},
            "coordination_snapshot": {"phase": "deciding"},
            "rag_context": {
                "identity": {"systemPrompt": "You are Priya."},
                "conversationHistory": [{"role": "user", "name": "Ana", "content": "hi?"}],
            },
        }
    )
    suggestion = orjson.dumps({"suggestedAction": "POSTED", "wasFollowed": followed}).decode()
    return tables(
        gold={
            "turn_rewards": [
                reward("decision", "d1", e, value, "decision_outcome@2", decision_id="d1")
            ]
        },
        episodes=[episode(e, "decision")],
        contexts=[ctx],
        decisions=[
            {
                "decision_id": "d1",
                "episode_id": e,
                "actor_id": "user-priya",
                "actor_type": "human",
                "action": "SILENT",
                "suggested_action": "POSTED",
                "suggestion_followed": followed,
                "confidence": 0.6,
                "context_hash": ctx["context_hash"],
                "attributes": orjson.dumps({"companion_suggestion": suggestion}).decode(),
            }
        ],
        feedback=[
            {
                "feedback_id": "g1",
                "episode_id": e,
                "decision_id": "d1",
                "target": "decision",
                "name": "was_good_decision",
                "value_num": 1.0 if value > 0 else 0.0,
                "scale": "bool",
                "source_kind": "human",
            }
        ],
    )


def test_overridden_companion_suggestion_prefers_the_human_action():
    silver, gold = _decision_tables(followed=False)
    ds = build_datasets(silver, gold, all_train(silver))
    (row,) = ds["preference"].to_dicts()
    assert row["pair_kind"] == "override"
    context_block = (
        'You are Priya.\n\n[decision context]\nambient state: {"temperature":0.1}\n'
        'coordination snapshot: {"phase":"deciding"}\ncompanion suggestion: '
        '{"suggestedAction":"POSTED"}'
    )
    assert row["prompt"] == [
        {"role": "system", "content": context_block},
        {"role": "user", "content": "Ana: hi?"},
    ]
    assert row["chosen"][0]["content"] == '{"action":"SILENT"}'
    assert row["rejected"][0]["content"] == '{"action":"POSTED"}'
    assert (row["reward_chosen"], row["reward_rejected"]) == (0.5, None)
    (kto,) = ds["kto"].to_dicts()
    assert (kto["label"], kto["reward_rule"], kto["decision_id"], kto["outcome_was_good"]) == (
        True,
        "decision_outcome@2",
        "d1",
        True,
    )
    (dec,) = ds["decisions"].to_dicts()
    assert (dec["ambient_state"], dec["coordination_state"]) == (
        '{"temperature":0.1}',
        '{"phase":"deciding"}',
    )
    assert (dec["action"], dec["confidence"], dec["outcome_reward"], dec["outcome_was_good"]) == (
        "SILENT",
        0.6,
        0.5,
        True,
    )


def test_override_rated_bad_gives_no_preference_pair():
    silver, gold = _decision_tables(followed=False, value=-0.5)
    assert build_datasets(silver, gold, all_train(silver))["preference"].height == 0


def test_followed_suggestion_gives_no_preference_pair():
    silver, gold = _decision_tables(followed=True)
    assert build_datasets(silver, gold, all_train(silver))["preference"].height == 0


def test_rated_alternatives_pair_best_over_worst_only_within_one_group():
    eps = [
        episode(f"dialogue:d/{i}", "dialogue", group)
        for i, group in ((1, "g1"), (2, "g1"), (3, "g2"))
    ]
    turns, rewards = [], []
    for i, (answer, value) in enumerate((("good", 1.0), ("bad", -1.0), ("worse", -0.9)), start=1):
        e = f"dialogue:d/{i}"
        turns += [turn(e, 0, "user", "same question"), turn(e, 1, "assistant", answer)]
        rewards.append(reward("turn", f"{e}#1", e, value, turn_id=f"{e}#1"))
    silver, gold = tables(gold={"turn_rewards": rewards}, episodes=eps, turns=turns)
    pref = build_datasets(silver, gold, all_train(silver))["preference"]
    (row,) = pref.filter(pl.col("pair_kind") == "rated_alternatives").to_dicts()
    assert (row["chosen"][0]["content"], row["rejected"][0]["content"]) == ("good", "bad")
    assert (row["reward_chosen"], row["reward_rejected"], row["group_id"]) == (1.0, -1.0, "g1")


def test_rated_alternative_pairs_do_not_depend_on_input_row_order():
    """Two completions tied on reward: the pair must be the same whichever row comes first."""
    from pipelines.exports.datasets.preference import rated_alternative_pairs

    messages = pl.List(pl.Struct({"role": pl.String, "content": pl.String}))
    kto = pl.DataFrame(
        {
            "episode_id": ["e1", "e1", "e1"],
            "prompt": [[{"role": "user", "content": "q"}]] * 3,
            "completion": [[{"role": "assistant", "content": t}] for t in ("a", "b", "c")],
            "turn_id": [None, None, None],
            "decision_id": ["d1", "d1", "d1"],
            "reward": [1.0, 1.0, -1.0],
            "reward_rule": ["r@1", "r@1", "r@1"],
            "feedback_ids": [["f1"], ["f2"], ["f3"]],
            "_prompt_text": ["q"] * 3,
        },
        schema_overrides={"prompt": messages, "completion": messages, "turn_id": pl.String},
    )
    episodes = pl.DataFrame({"episode_id": ["e1"], "group_id": ["g1"]})
    pairs = {
        rated_alternative_pairs(kto.sample(fraction=1.0, shuffle=True, seed=s), episodes)
        .select("chosen", "rejected")
        .to_dicts()
        .__repr__()
        for s in range(6)
    }
    assert len(pairs) == 1


def test_rated_alternatives_without_a_prompt_text_make_no_pair():
    """Rows with no prompt text answer no known prompt: two of them are never a pair."""
    from pipelines.exports.datasets.preference import rated_alternative_pairs

    messages = pl.List(pl.Struct({"role": pl.String, "content": pl.String}))
    kto = pl.DataFrame(
        {
            "episode_id": ["e1", "e1"],
            "prompt": [[{"role": "user", "content": "q"}]] * 2,
            "completion": [[{"role": "assistant", "content": t}] for t in ("good", "bad")],
            "turn_id": ["t1", "t2"],
            "decision_id": [None, None],
            "reward": [1.0, -1.0],
            "reward_rule": ["r@1", "r@1"],
            "feedback_ids": [["f1"], ["f2"]],
            "_prompt_text": [None, None],
        },
        schema_overrides={"prompt": messages, "completion": messages, "decision_id": pl.String},
    )
    episodes = pl.DataFrame({"episode_id": ["e1"], "group_id": ["g1"]})
    assert rated_alternative_pairs(kto, episodes).height == 0


def test_rewards_by_target_means_several_rules_and_keeps_one_rules_reward_as_it_is():
    ids = pl.List(pl.String)
    rewards = pl.DataFrame(
        {
            "target": ["turn", "turn", "turn", "turn", "turn", "turn", "episode"],
            "turn_id": ["t1", "t2", "t2", "t3", "t4", "t5", "t1"],
            "reward": [1.0, 0.5, -0.3, 0.2, 0.0, 0.3, 9.0],
            "reward_rule": ["a@1", "b@1", "a@1", "c@1", "d@1", "e@1", "x@1"],
            "feedback_ids": [["f2", "f1", "f2"], ["f3"], ["f1", None], [], None, ["z"], ["q"]],
        },
        schema_overrides={"feedback_ids": ids},
    )
    got = rewards_by(rewards, "turn_id", ("turn",)).sort("turn_id")
    # by hand: t2 = mean(0.5, -0.3) = 0.1 with both rules sorted and every id once, a null id
    # first; one rule's ids distinct and sorted; an empty list stays empty, a missing one is
    # one null id (what grouping makes of it); the episode's reward is not a turn's
    expected = pl.DataFrame(
        {
            "turn_id": ["t1", "t2", "t3", "t4", "t5"],
            "reward": [1.0, 0.1, 0.2, 0.0, 0.3],
            "reward_rule": ["a@1", "a@1,b@1", "c@1", "d@1", "e@1"],
            "feedback_ids": [["f1", "f2"], [None, "f1", "f3"], [], [None], ["z"]],
        },
        schema_overrides={"feedback_ids": ids},
    )
    assert got.drop("reward").equals(expected.drop("reward"))
    assert got["reward"].to_list() == pytest.approx(expected["reward"].to_list())
