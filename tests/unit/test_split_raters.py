"""`[splits] link_raters`: whether a dialogue rater links the conversations they rated into one
split group, what the split proof then checks, and how the setting is read and recorded."""

from __future__ import annotations

from datetime import UTC, datetime

import polars as pl
import pytest

from pipelines.config.settings import Settings
from pipelines.config.splits import SplitConfig
from pipelines.partitions import assign
from pipelines.partitions.assign import scheme_of
from pipelines.splits.assign import assign_splits, proof_problems, split_proof
from pipelines.transforms.dialogue.conversations import grouped_by_people
from tests.unit.test_config import error_for, settings_for
from tests.unit.test_transform_dialogue import conversation, event
from tests.unit.test_transform_dialogue import silver as dialogue_silver

OFF = SplitConfig(link_raters=False)


# ---------------------------------------------------------------- groups


def _rated_by(*raters: str) -> dict[str, str]:
    """Dialogue silver of conversations c1, c2, … (in that order of time), ci rated by the i-th
    rater; {episode_id: group_id} with the default and with link_raters off."""
    conversations = [
        conversation(c, ["user", "assistant"], line=i, created_at=datetime(2025, 1, i, tzinfo=UTC))
        for i, c in enumerate([f"c{n}" for n in range(1, len(raters) + 1)], start=1)
    ]
    events = [
        event(f"c{i}", 1, key=f"k{i}", rating=1.0, extra=f'{{"user_id":"{who}"}}', line=i)
        for i, who in enumerate(raters, start=1)
    ]
    groups = {}
    for name, settings in (("on", Settings()), ("off", Settings(splits=OFF))):
        out = dialogue_silver(conversations, events, settings)
        groups[name] = dict(out["episodes"].select("episode_id", "group_id").iter_rows())
    return groups


def test_two_conversations_sharing_only_a_rater_are_one_group_by_default_and_two_without():
    groups = _rated_by("u-7", "u-7")
    assert groups["on"] == {
        "dialogue:support/c1": "dialogue:support/c1",
        "dialogue:support/c2": "dialogue:support/c1",
    }
    assert groups["off"] == {
        "dialogue:support/c1": "dialogue:support/c1",
        "dialogue:support/c2": "dialogue:support/c2",
    }


def _frames(user_of: dict[str, str | None], rater_of: dict[str, str | None]):
    """episodes (ids e1, e2, … in time order), their user turns and human feedback."""
    ids = sorted(user_of)
    episodes = pl.LazyFrame(
        {
            "episode_id": ids,
            "started_at": [datetime(2025, 1, i + 1, tzinfo=UTC) for i in range(len(ids))],
            "group_id": ids,
        }
    )
    turns = pl.LazyFrame(
        {"episode_id": ids, "role": ["user"] * len(ids), "actor_id": [user_of[e] for e in ids]},
        schema_overrides={"actor_id": pl.String},
    )
    rated = sorted(e for e, r in rater_of.items() if r)
    feedback = pl.LazyFrame(
        {
            "episode_id": rated,
            "source_kind": ["human"] * len(rated),
            "attributes": [f'{{"user_id":"{rater_of[e]}"}}' for e in rated],
        },
        schema_overrides={"episode_id": pl.String, "attributes": pl.String},
    )
    return episodes, turns, feedback


@pytest.mark.parametrize("link_raters", [True, False])
def test_two_conversations_sharing_a_user_are_one_group_either_way(link_raters):
    frames = _frames({"e1": "ana", "e2": "ana", "e3": None}, {"e3": "r-1"})
    out = grouped_by_people(*frames, link_raters=link_raters).collect()
    assert dict(out.select("episode_id", "group_id").iter_rows()) == {
        "e1": "e1",
        "e2": "e1",
        "e3": "e3",
    }


def test_a_rater_bridging_two_users_groups_only_by_default():
    frames = _frames({"e1": "ana", "e2": "bo"}, {"e1": "r-1", "e2": "r-1"})
    on = grouped_by_people(*frames, link_raters=True).collect()
    off = grouped_by_people(*frames, link_raters=False).collect()
    assert dict(on.select("episode_id", "group_id").iter_rows()) == {"e1": "e1", "e2": "e1"}
    assert dict(off.select("episode_id", "group_id").iter_rows()) == {"e1": "e1", "e2": "e2"}


# ---------------------------------------------------------------- the proof


def _two_groups_in_two_splits(config: SplitConfig) -> tuple[pl.DataFrame, str, str]:
    """The assignment of enough groups that one is in train and one in test, and those two."""
    splits = assign_splits(pl.Series([f"dialogue:g{i}" for i in range(40)]), config)
    train = splits.filter(pl.col("split") == "train")["group_id"][0]
    test = splits.filter(pl.col("split") == "test")["group_id"][0]
    return splits.filter(pl.col("group_id").is_in([train, test])), train, test


def _silver(train: str, test: str, *, user: str | None, rater: str | None) -> dict:
    """One dialogue episode per group (episode id = group id), with a user turn by `user` and a
    human rating by `rater` in both."""
    ids = [train, test]
    return {
        "episodes": pl.DataFrame({"episode_id": ids, "group_id": ids, "source": ["dialogue"] * 2}),
        "turns": pl.DataFrame(
            {"episode_id": ids, "role": ["user"] * 2, "actor_id": [user] * 2},
            schema_overrides={"actor_id": pl.String},
        ),
        "feedback": pl.DataFrame(
            {
                "episode_id": ids,
                "source_kind": ["human"] * 2,
                "attributes": [None if rater is None else f'{{"user_id":"{rater}"}}'] * 2,
            },
            schema_overrides={"attributes": pl.String},
        ),
    }


@pytest.mark.parametrize("config", [SplitConfig(), OFF], ids=["on", "off"])
def test_a_rater_in_two_splits_is_leakage_only_when_raters_link(config):
    splits, train, test = _two_groups_in_two_splits(config)
    proof = split_proof(splits, _silver(train, test, user=None, rater="r-1"), {}, config)
    problems = proof_problems(proof)
    if config.link_raters:
        assert proof["overlaps"]["participants"]["count"] == 1
        assert len(problems) == 1 and problems[0].startswith("participants:")
        assert "raters_linked" not in proof and "unchecked_participant_kinds" not in proof
    else:
        assert proof["overlaps"]["participants"]["count"] == 0 and problems == []
        assert proof["raters_linked"] is False
        assert proof["unchecked_participant_kinds"] == {"feedback_rater": 1}


@pytest.mark.parametrize("config", [SplitConfig(), OFF], ids=["on", "off"])
def test_a_user_in_two_splits_is_leakage_either_way(config):
    splits, train, test = _two_groups_in_two_splits(config)
    proof = split_proof(splits, _silver(train, test, user="ana", rater=None), {}, config)
    overlap = proof["overlaps"]["participants"]
    assert overlap["count"] == 1
    assert overlap["examples"][0]["participant_id"] == "dialogue:ana"
    assert proof_problems(proof)


# ---------------------------------------------------------------- settings and records


def test_link_raters_is_read_from_turnlake_toml_and_defaults_to_true(tmp_path):
    assert settings_for(tmp_path, "")[0].splits.link_raters is True
    off, _ = settings_for(tmp_path, "[splits]\nlink_raters = false\n")
    assert off.splits == SplitConfig(link_raters=False)


@pytest.mark.parametrize("value", ['"no"', "0", '"false"'])
def test_link_raters_must_be_a_boolean(tmp_path, value):
    message = error_for(tmp_path, f"[splits]\nlink_raters = {value}\n")
    assert "[splits] link_raters: should be true or false" in message


def test_the_release_records_link_raters_only_when_off():
    ratios = {"train": 0.8, "test": 0.2}
    # the near-duplicate settings decide splits too: always recorded
    near = {"enabled": True, "shingle_size": 3, "threshold": 0.5, "num_perm": 128, "bands": 32}
    base = {"salt": "turnlake-splits-v1", "ratios": ratios, "near_duplicates": near}
    assert SplitConfig().record() == base
    assert OFF.record() == {**base, "link_raters": False}


def test_the_partition_scheme_changes_with_link_raters():
    assert scheme_of(OFF, 4) != scheme_of(SplitConfig(), 4)
    assert scheme_of(SplitConfig(link_raters=True), 4) == scheme_of(SplitConfig(), 4)


def test_the_partition_scheme_changes_with_the_engine(monkeypatch):
    """The map holds each group's split: another engine may split otherwise, so it reassigns."""
    before = scheme_of(SplitConfig(), 4)
    monkeypatch.setattr(assign, "engine_digest", lambda: "another engine")
    assert scheme_of(SplitConfig(), 4) != before


@pytest.mark.parametrize(
    ("splits", "said"),
    [
        ({"salt": "s"}, "all conversations a dialogue rater rated"),
        ({"salt": "s", "link_raters": False}, "dialogue raters do not link conversations"),
    ],
)
def test_the_card_says_which_people_link_a_group(splits, said):
    from pipelines.release.card.render import _grouping_line

    line = _grouping_line(splits)
    assert said in line and "decision sessions of a human actor" in line
