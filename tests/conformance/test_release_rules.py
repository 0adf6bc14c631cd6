"""DESIGN §5 "What a trainer can rely on", on tiny hand-written raw roots run through the real
pipeline.

Expected values are written out by hand in each test. Groups are put in a split by choosing their
ids (`id_in`): that selects the input, it computes no expected output.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import polars as pl
import pytest

from pipelines.config.splits import SplitConfig
from pipelines.release.build import datasets as partition_datasets
from pipelines.release.store.files import complete_releases
from pipelines.release.trainability.folder import trainability_problems
from pipelines.release.trainability.problems import UntrainableRelease
from pipelines.splits.assign import assign_splits
from tests.conformance.harness import ALL_TRAIN, run_pipeline, write_json, write_jsonl

HALVES = '[splits]\nsalt = "conformance"\n[splits.ratios]\ntrain = 0.5\ntest = 0.5\n'
GREETING = "Hello, this is the fire department. There is a wildfire near your home. How are you?"


def id_in(split: str, prefix: str, group: str = "") -> str:
    """The first id `<prefix>-<letters>` whose group (`<group><id>`) is put in `split` by HALVES
    and by the default [splits] alike (issue 13 item 8: the [splits] table of turnlake.toml is
    not read yet; these tests must not depend on whether it is)."""
    configs = (SplitConfig(salt="conformance", ratios={"train": 0.5, "test": 0.5}), SplitConfig())
    for i in range(676):
        candidate = f"{prefix}-{chr(97 + i % 26)}{chr(97 + i // 26)}"
        if all(
            assign_splits(pl.Series([group + candidate]), c)["split"][0] == split for c in configs
        ):
            return candidate
    raise AssertionError("no id found")


def study_session(
    raw: Path,
    participant: str,
    replies: list[tuple[str, str, str]],
    *,
    scenario: str | None = None,
    stances: tuple[str, ...] = (),
) -> None:
    """A session opened by the operator's GREETING; `replies`: (resident message, operator reply,
    policy) per IQL step; judge stances NEUTRAL unless given."""
    history = [{"role": "operator", "text": GREETING}]
    iql = []
    for k, (resident, operator, policy) in enumerate(replies, start=1):
        history += [{"role": "resident", "text": resident}, {"role": "operator", "text": operator}]
        stance = stances[k - 1] if k <= len(stances) else "NEUTRAL"
        iql.append(
            {
                "turn": k,
                "resident_message": resident,
                "operator_response": operator,
                "selected_policy": policy,
                "q_values": {policy: 1.0, "other": 0.5},
                "judge": {"stance": stance, "confidence": 0.5, "reason": "unclear"},
                "timestamp": f"2026-01-09T07:1{k}:00",
            }
        )
    session_id = f"{participant}_ana"
    write_json(
        raw / "survey_responses" / "conversations" / f"{session_id}.json",
        {
            "session_id": session_id,
            "participant_id": participant,
            "character": "ana",
            "conversation_type": "roleplay",
            "persuasion_strategy": None,
            "turn_count": len(replies),
            "history": history,
            "iql_data": iql,
            "created_at": "2026-01-09T07:10:00",
            "ended_at": "2026-01-09T07:20:00",
            "scenario": scenario,
        },
    )


def social_round(raw: Path, run: str, experiment: str, messages: list[tuple[str, str]]) -> None:
    """Round one of a run: (agent id, text) messages in order, the meta block inline."""
    write_json(
        raw / "outputs" / run / "round1_social_rl.json",
        {
            "meta": {
                "experiment_id": experiment,
                "framework": "Civic Engagement",
                "model": "mock-llm",
            },
            "round_number": 1,
            "messages": [
                {
                    "agent_id": agent,
                    "content": text,
                    "round_number": 1,
                    "turn_number": i,
                    "timestamp": 1764000000.0 + i,
                }
                for i, (agent, text) in enumerate(messages, start=1)
            ],
        },
    )


def dialogue(
    raw: Path, conversation: str, turns: list[tuple[str, str]], ratings: dict[int, int]
) -> None:
    write_jsonl(
        raw / "dialogues" / "support" / f"{conversation}.jsonl",
        [{"conversation_id": conversation, "turns": [{"role": r, "content": c} for r, c in turns]}],
    )
    if ratings:
        write_jsonl(
            raw / "feedback" / "support" / f"{conversation}.jsonl",
            [
                {"conversation_id": conversation, "turn_index": i, "rating": r}
                for i, r in ratings.items()
            ],
        )


def rows(built, dataset: str) -> pl.DataFrame:
    return built.datasets.get(dataset, pl.DataFrame())


# ---------------------------------------------------------------- rl_steps: whole episodes (issue
# item 2)


def test_rl_steps_test_episode_sharing_a_templated_greeting_with_train_keeps_every_step(tmp_path):
    """Both sessions open with GREETING and get the reply "hello": step 0 observes the same
    [greeting, "hello"] in train and test. Duplicate-prompt removal used to drop that step from the
    test episode (no is_first, steps 1.. only)."""
    raw = tmp_path / "raw"
    train, test = id_in("train", "pa"), id_in("test", "pa")
    study_session(
        raw,
        train,
        [("hello", "Please pack a bag now.", "niki"), ("why", "The fire moves fast.", "ross")],
    )
    study_session(
        raw,
        test,
        [("hello", "Can you leave soon?", "bob"), ("maybe", "Your street is next.", "lindsay")],
    )
    built = run_pipeline(raw, tmp_path / "data", config=HALVES)
    steps = rows(built, "rl_steps").filter(pl.col("split") == "test").sort("step")
    assert steps["step"].to_list() == [0, 1]
    assert steps["action"].to_list() == ["bob", "lindsay"]
    assert steps["is_first"].to_list() == [True, False]
    assert steps["is_last"].to_list() == [False, True]
    assert trainability_problems(built.release) == []


def test_rl_steps_test_episode_with_an_empty_first_observation_keeps_its_first_step(tmp_path):
    """The first speaker of a Social RL round sees nothing yet: observation "[]" in every run. It
    used to be dropped from the test run as a duplicate of the train run's "[]"."""
    raw = tmp_path / "raw"
    # a Social RL group is its experiment: `experiment:<experiment_id>`
    train, test = id_in("train", "exp", "experiment:"), id_in("test", "exp", "experiment:")
    social_round(
        raw, "run_train", train, [("Alice", "Buses first, please."), ("Bob", "Roads need repair.")]
    )
    social_round(
        raw,
        "run_test",
        test,
        [("Alice", "Parks deserve funding."), ("Bob", "Schools matter more.")],
    )
    built = run_pipeline(raw, tmp_path / "data", config=HALVES)
    alice = rows(built, "rl_steps").filter(
        (pl.col("split") == "test") & pl.col("episode_id").str.ends_with("@Alice")
    )
    assert alice.select("step", "action", "observation", "is_first", "is_last").rows() == [
        (0, "Parks deserve funding.", "[]", True, True)
    ]


def test_rl_steps_episode_repeating_a_train_episode_exactly_is_dropped_whole(tmp_path):
    """Same greeting, replies and policies in a train and a test session: the test episode is a
    duplicate example, left out with both its steps (none kept, none cut); the train one stays."""
    raw = tmp_path / "raw"
    train, test = id_in("train", "pa"), id_in("test", "pa")
    same = [("hello", "Please pack a bag now.", "niki"), ("why", "The fire moves fast.", "ross")]
    study_session(raw, train, same)
    study_session(raw, test, same)
    built = run_pipeline(raw, tmp_path / "data", config=HALVES)
    steps = rows(built, "rl_steps")
    assert steps.filter(pl.col("split") == "test").height == 0
    assert steps.filter(pl.col("split") == "train").sort("step")["action"].to_list() == [
        "niki",
        "ross",
    ]


# ---------------------------------------------------------------- chat shape (issue item 7)


def test_sft_study_session_opened_by_the_operator_starts_with_a_user_turn_after_system_context(
    tmp_path,
):
    """The operator speaks first and the session has a scenario: both become the one system
    message."""
    raw = tmp_path / "raw"
    study_session(
        raw,
        "pa-one",
        [("I see smoke", "Please leave now.", "niki")],
        scenario="You are at home when you notice smoke.",
    )
    built = run_pipeline(raw, tmp_path / "data", config=ALL_TRAIN)
    assert rows(built, "sft")["messages"].to_list() == [
        [
            {
                "role": "system",
                "content": "The resident's scenario: You are at home when you notice smoke.\n\n"
                f"The assistant opened with: {GREETING}",
            },
            {"role": "user", "content": "I see smoke"},
            {"role": "assistant", "content": "Please leave now."},
        ]
    ]


def test_sft_social_rl_other_agents_speaking_in_a_row_become_one_named_user_turn(tmp_path):
    """Carol's second message, seen from Carol: Alice and Bob spoke in a row (one user turn of named
    lines); Carol's own opening came before anyone else spoke (system context)."""
    raw = tmp_path / "raw"
    social_round(
        raw,
        "run_one",
        "exp-one",
        [
            ("Carol", "Let us begin."),
            ("Alice", "Buses first."),
            ("Bob", "Roads first."),
            ("Carol", "Both, in turn."),
        ],
    )
    built = run_pipeline(raw, tmp_path / "data", config=ALL_TRAIN)
    (messages,) = (
        rows(built, "sft")
        .filter(pl.col("messages").list.last().struct.field("content") == "Both, in turn.")[
            "messages"
        ]
        .to_list()
    )
    assert messages == [
        {"role": "system", "content": "The assistant opened with: Let us begin."},
        {"role": "user", "content": "Alice: Buses first.\n\nBob: Roads first."},
        {"role": "assistant", "content": "Both, in turn."},
    ]


def test_sft_leaves_out_an_answer_with_negative_reward_unless_configured(tmp_path):
    """Rating −1 on the first answer (reward −0.8), +1 on the second (+0.8)."""
    raw = tmp_path / "raw"
    dialogue(
        raw,
        "c-one",
        [
            ("user", "Where is my parcel?"),
            ("assistant", "No idea."),
            ("user", "Please check."),
            ("assistant", "It arrives tomorrow."),
        ],
        {1: -1, 3: 1},
    )
    built = run_pipeline(raw, tmp_path / "data", config=ALL_TRAIN)
    sft = rows(built, "sft")
    assert sft["messages"].list.last().struct.field("content").to_list() == ["It arrives tomorrow."]
    assert sft["reward"].to_list() == [0.8]
    kept = run_pipeline(
        raw, tmp_path / "data2", config=ALL_TRAIN + "[release]\nsft_include_negative = true\n"
    )
    assert sorted(rows(kept, "sft")["reward"].to_list()) == [-0.8, 0.8]


# ---------------------------------------------------------------- kto labels (issue item 6)


def test_kto_label_is_the_sign_of_the_reward_and_reward_zero_is_left_out(tmp_path):
    """Ratings +1, 0, −1 → rewards +0.8, 0, −0.8 (dialogue_feedback): labels true, (left out),
    false. The reward-0 row used to ship as label false (undesirable)."""
    raw = tmp_path / "raw"
    for name, rating in (("c-up", 1), ("c-flat", 0), ("c-down", -1)):
        dialogue(
            raw,
            name,
            [("user", f"Question for {name}?"), ("assistant", f"Answer for {name}.")],
            {1: rating},
        )
    built = run_pipeline(raw, tmp_path / "data", config=ALL_TRAIN)
    kto = rows(built, "kto").select(
        pl.col("completion").list.first().struct.field("content"), "reward", "label"
    )
    assert sorted(kto.rows()) == [
        ("Answer for c-down.", -0.8, False),
        ("Answer for c-up.", 0.8, True),
    ]
    neutral = run_pipeline(
        raw, tmp_path / "data2", config=ALL_TRAIN + "[release]\nkto_include_neutral = true\n"
    )
    flat = rows(neutral, "kto").filter(pl.col("reward") == 0.0)
    assert flat["label"].to_list() == [False]


# ---------------------------------------------------------------- row order, blocking checks


def test_released_rows_are_in_a_stable_pseudo_random_order_by_a_hash_of_the_row_id(tmp_path):
    """sft rows ordered by sha256(turn_id), not grouped by source or conversation."""
    raw = tmp_path / "raw"
    for name in ("c-a", "c-b", "c-c", "c-d", "c-e"):
        dialogue(raw, name, [("user", f"Ask {name}"), ("assistant", f"Reply {name}")], {})
    built = run_pipeline(raw, tmp_path / "data", config=ALL_TRAIN)
    turn_ids = rows(built, "sft")["turn_id"].to_list()
    assert turn_ids == sorted(turn_ids, key=lambda t: hashlib.sha256(t.encode()).hexdigest())
    assert turn_ids != sorted(turn_ids)  # with these five ids the hash order is not the id order


def test_release_whose_own_files_are_not_trainable_is_not_published(tmp_path, monkeypatch):
    """A builder shipping a KTO label against its reward: make_release raises, no version
    appears."""
    raw = tmp_path / "raw"
    dialogue(raw, "c-up", [("user", "Is it late?"), ("assistant", "It ships today.")], {1: 1})
    real = partition_datasets.build_datasets

    def wrong_labels(*args, **kwargs):
        datasets = real(*args, **kwargs)
        return datasets | {"kto": datasets["kto"].with_columns(label=pl.lit(False))}

    monkeypatch.setattr(partition_datasets, "build_datasets", wrong_labels)
    with pytest.raises(UntrainableRelease, match="label is not the sign of the reward"):
        run_pipeline(raw, tmp_path / "data", config=ALL_TRAIN)
    exports = tmp_path / "data" / "exports"
    assert complete_releases(exports) == [] and not list(exports.glob(".tmp-*"))


def test_the_release_is_trainable_check_fails_on_a_latest_release_whose_files_break_a_rule(
    tmp_path,
):
    """The blocking asset check judges the published files themselves (a release written by older
    code, or edited after publication), not what the builders would produce today."""
    from pipelines.checks.verdicts import release_is_trainable

    raw = tmp_path / "raw"
    dialogue(raw, "c-up", [("user", "Is it late?"), ("assistant", "It ships today.")], {1: 1})
    built = run_pipeline(raw, tmp_path / "data", config=ALL_TRAIN)
    assert release_is_trainable(built.settings).passed
    kto_file = next((built.release / "kto").glob("*.parquet"))
    pl.read_parquet(kto_file).with_columns(label=pl.lit(False)).write_parquet(kto_file)
    verdict = release_is_trainable(built.settings)
    assert not verdict.passed
    assert "label is not the sign of the reward" in verdict.metadata["first_problems"]
