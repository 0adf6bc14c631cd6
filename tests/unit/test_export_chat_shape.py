"""The chat shape every chat column is put in (pipelines/exports/datasets/chat_shape.py), rule by
rule."""

from __future__ import annotations

import polars as pl

from pipelines.exports.datasets.chat_shape import (
    shape_columns,
    shape_conversations,
    shape_messages,
    shape_prompt_completions,
)
from pipelines.exports.datasets.common import MESSAGES


def m(role: str, content: str) -> dict:
    return {"role": role, "content": content}


def shaped(*messages: dict) -> list[dict]:
    return shape_messages(pl.Series("messages", [list(messages)], dtype=MESSAGES)).to_list()[0]


def test_system_messages_before_the_first_user_turn_join_one_system_message():
    assert shaped(m("system", "S"), m("system", "T"), m("user", "q"), m("assistant", "a")) == [
        m("system", "S\n\nT"),
        m("user", "q"),
        m("assistant", "a"),
    ]


def test_an_assistant_opening_becomes_system_context():
    assert shaped(m("assistant", "Hello"), m("user", "q"), m("assistant", "a")) == [
        m("system", "The assistant opened with: Hello"),
        m("user", "q"),
        m("assistant", "a"),
    ]


def test_a_later_system_message_and_an_unknown_role_become_user_text():
    assert shaped(
        m("user", "q"), m("system", "be brief"), m("tool", "42"), m("assistant", "a")
    ) == [m("user", "q\n\nSystem: be brief\n\ntool: 42"), m("assistant", "a")]


def test_consecutive_turns_of_one_role_merge():
    assert shaped(
        m("user", "A: x"), m("user", "B: y"), m("assistant", "a"), m("assistant", "b")
    ) == [m("user", "A: x\n\nB: y"), m("assistant", "a\n\nb")]


def test_a_conversation_without_a_user_turn_is_left_out_and_counted():
    frame = pl.DataFrame(
        {
            "messages": [
                [m("assistant", "x"), m("assistant", "y")],
                [m("user", "q"), m("assistant", "a")],
            ]
        },
        schema={"messages": MESSAGES},
    )
    kept, left_out = shape_conversations(frame, "messages")
    assert left_out == 1 and kept["messages"].to_list() == [[m("user", "q"), m("assistant", "a")]]


def test_an_assistant_turn_ending_the_prompt_starts_every_completion():
    frame = pl.DataFrame(
        {
            "prompt": [[m("user", "q"), m("assistant", "first")]],
            "chosen": [[m("assistant", "good")]],
            "rejected": [[m("assistant", "bad")]],
        },
        schema={"prompt": MESSAGES, "chosen": MESSAGES, "rejected": MESSAGES},
    )
    kept, left_out = shape_prompt_completions(frame, "prompt", ("chosen", "rejected"))
    assert left_out == 0
    assert kept.row(0, named=True) == {
        "prompt": [m("user", "q")],
        "chosen": [m("assistant", "first\n\ngood")],
        "rejected": [m("assistant", "first\n\nbad")],
    }


def test_a_prompt_without_a_user_turn_is_left_out():
    frame = pl.DataFrame(
        {"prompt": [[m("system", "You are Priya.")]], "completion": [[m("assistant", "{}")]]},
        schema={"prompt": MESSAGES, "completion": MESSAGES},
    )
    assert shape_prompt_completions(frame, "prompt", ("completion",))[1] == 1


def test_lists_in_the_shape_are_kept_and_the_others_rebuilt_in_their_rows():
    lists = [
        [m("user", "q"), m("assistant", "a")],
        [m("user", "q"), m("user", "r"), m("assistant", "a")],
        None,
        [],
        [m("user", "q"), None, m("assistant", "a")],
        [m("system", "s"), m("user", "x")],
        [{"role": None, "content": "q"}, m("assistant", "a")],
        [m("assistant", "Hello"), m("user", "q"), m("assistant", "a")],
        [m("user", "q"), {"role": "assistant", "content": None}],
        [m("user", "p"), m("assistant", "b"), m("user", "s")],
    ]
    out = shape_messages(pl.Series("messages", lists, dtype=MESSAGES)).to_list()
    assert out == [
        [m("user", "q"), m("assistant", "a")],
        [m("user", "q\n\nr"), m("assistant", "a")],
        [],
        [],
        [m("user", "q"), m("assistant", "a")],
        [m("system", "s"), m("user", "x")],
        [m("user", "q"), m("assistant", "a")],
        [m("system", "The assistant opened with: Hello"), m("user", "q"), m("assistant", "a")],
        [m("user", "q"), m("assistant", "")],
        [m("user", "p"), m("assistant", "b"), m("user", "s")],
    ]


def test_a_completion_keeps_its_roles_and_merges_only_runs():
    lists = [[m("assistant", "a")], [m("assistant", "a"), m("assistant", "b")], [m("system", "s")]]
    out = shape_messages(pl.Series("c", lists, dtype=MESSAGES), opens_chat=False).to_list()
    assert out == [[m("assistant", "a")], [m("assistant", "a\n\nb")], [m("system", "s")]]


def test_columns_shaped_in_one_pass_are_each_shaped_as_alone():
    prompts = pl.Series("prompt", [[m("assistant", "Hi"), m("user", "q")]], dtype=MESSAGES)
    chats = pl.Series(
        "messages",
        [[m("user", "a"), m("user", "b"), m("assistant", "c")], [m("user", "x"), m("tool", "t")]],
        dtype=MESSAGES,
    )
    out = shape_columns([prompts, chats])
    assert [s.name for s in out] == ["prompt", "messages"]
    assert out[0].to_list() == [[m("system", "The assistant opened with: Hi"), m("user", "q")]]
    assert out[1].to_list() == [
        [m("user", "a\n\nb"), m("assistant", "c")],
        [m("user", "x\n\ntool: t")],
    ]
