"""Split units where a person spans native units: decision humans across sessions, dialogue
raters."""

from __future__ import annotations

from datetime import UTC, datetime

import polars as pl

from pipelines.transforms.groups import person_components
from tests.unit.test_transform_decision import T0, record
from tests.unit.test_transform_decision import silver as decision_silver
from tests.unit.test_transform_dialogue import conversation, event
from tests.unit.test_transform_dialogue import silver as dialogue_silver


def units(*pairs: tuple[str, int | None]) -> pl.DataFrame:
    ts = [None if h is None else datetime(2025, 1, 1, h, tzinfo=UTC) for _, h in pairs]
    return pl.DataFrame(
        {"unit": [u for u, _ in pairs], "started_at": pl.Series(ts, dtype=pl.Datetime("us", "UTC"))}
    )


def links(*pairs: tuple[str, str]) -> pl.DataFrame:
    return pl.DataFrame(pairs, schema={"unit": pl.String, "person": pl.String}, orient="row")


def test_units_sharing_a_person_transitively_form_one_group_named_after_the_earliest():
    out = person_components(
        units(("s3", 1), ("s1", 2), ("s2", 3), ("s4", 4), ("s5", None)),
        links(("s1", "ana"), ("s2", "ana"), ("s2", "joel"), ("s3", "joel"), ("s4", "zed")),
    )
    assert dict(out.iter_rows()) == {"s1": "s3", "s2": "s3", "s3": "s3", "s4": "s4", "s5": "s5"}


def test_a_chain_of_units_is_one_group_however_long():
    """u5 reaches u1 (the earliest) only through four people, one round each."""
    chain = [(f"u{i}", f"p{i}") for i in range(1, 5)] + [
        (f"u{i + 1}", f"p{i}") for i in range(1, 5)
    ]
    out = person_components(units(*((f"u{i}", i) for i in range(1, 6))), links(*chain))
    assert dict(out.iter_rows()) == {f"u{i}": "u1" for i in range(1, 6)}


def test_a_later_unit_joining_a_group_does_not_rename_it():
    before = person_components(units(("b", 1), ("a", 2)), links(("a", "ana"), ("b", "ana")))
    after = person_components(
        units(("b", 1), ("a", 2), ("0-new", 3)), links(("a", "ana"), ("b", "ana"), ("0-new", "ana"))
    )
    assert set(before["group"]) == set(after["group"]) == {"b"}


def test_decision_sessions_sharing_a_human_actor_share_a_group_and_ai_actors_do_not_link():
    out = decision_silver(
        record("d1", session_id="s1", actor_id="user-ana", actor_type="human"),
        record(
            "d2", session_id="s2", actor_id="user-ana", actor_type="human", ts=T0.replace(hour=11)
        ),
        record(
            "d3", session_id="s3", ts=T0.replace(hour=12)
        ),  # same AI persona as s1: not a person
        record("d4", session_id="s1", ts=T0.replace(hour=9, minute=5)),
    )
    groups = dict(out["episodes"].select("episode_id", "group_id").iter_rows())
    assert groups == {
        "decision:s1": "decision:s1",
        "decision:s2": "decision:s1",
        "decision:s3": "decision:s3",
    }


def test_dialogue_conversations_rated_by_one_user_share_a_group():
    conversations = [
        conversation(c, ["user", "assistant"], line=i, created_at=datetime(2025, 1, i, tzinfo=UTC))
        for i, c in enumerate(("c1", "c2", "c3"), start=1)
    ]
    events = [
        event("c1", 1, key="k1", rating=1.0, extra='{"user_id":"u-7"}'),
        event("c2", 1, key="k2", rating=1.0, extra='{"user_id":"u-7"}', line=2),
        event("c3", 1, key="k3", rating=1.0, extra='{"user_id":"u-8"}', line=3),
    ]
    out = dialogue_silver(conversations, events)
    groups = dict(out["episodes"].select("episode_id", "group_id").iter_rows())
    assert groups == {
        "dialogue:support/c1": "dialogue:support/c1",
        "dialogue:support/c2": "dialogue:support/c1",
        "dialogue:support/c3": "dialogue:support/c3",
    }
