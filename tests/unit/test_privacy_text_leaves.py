"""Strings rewritten by (row key, value) at any depth (pipelines/privacy/text_leaves.py)."""

from __future__ import annotations

import polars as pl

from pipelines.privacy.text_leaves import replace_keyed_strings

MESSAGE = pl.Struct({"role": pl.String, "content": pl.String, "turn": pl.Int64})
CHANGES = pl.DataFrame(
    {
        "episode_id": ["e1", "e1", "e2"],
        "value": ["Hi Ben", "Ben", "Hi Ben"],
        "cleaned": ["Hi [PERSON]", "[PERSON]", "Hi B."],
    }
)


def test_a_string_changes_only_in_the_rows_whose_key_changed_it_each_as_its_key_says():
    frame = pl.DataFrame(
        {"text": ["Hi Ben", "Hi Ben", "Hi Ben", None, "Ben"], "n": [1, 2, 3, 4, 5]}
    )
    keys = pl.Series(["e1", "e2", "e3", "e1", None])
    out = replace_keyed_strings(frame, ["text"], keys, CHANGES)
    assert out.rows() == [
        ("Hi [PERSON]", 1),
        ("Hi B.", 2),
        ("Hi Ben", 3),  # e3 changed nothing
        (None, 4),
        ("Ben", 5),  # a row without a key is left alone
    ]


def test_nested_lists_and_structs_keep_their_shape_nulls_and_empty_lists():
    messages = [
        [{"role": "user", "content": "Hi Ben", "turn": 1}, None],
        [],
        None,
        [
            {"role": "Ben", "content": "Hi Ben", "turn": 2},
            {"role": None, "content": "Ben", "turn": 3},
        ],
    ]
    lists = [[["Ben", "x"], [], None], None, [[]], [["Ben"]]]
    frame = pl.DataFrame(
        {"messages": messages, "lists": lists},
        schema={"messages": pl.List(MESSAGE), "lists": pl.List(pl.List(pl.String))},
    )
    keys = pl.Series(["e1", "e1", "e1", "e2"])
    out = replace_keyed_strings(frame, ["messages", "lists"], keys, CHANGES)
    assert out.schema == frame.schema
    assert out.to_dict(as_series=False) == {
        "messages": [
            [{"role": "user", "content": "Hi [PERSON]", "turn": 1}, None],
            [],
            None,
            # e2 rewrites "Hi Ben" its own way and leaves "Ben" (a change of e1's only)
            [
                {"role": "Ben", "content": "Hi B.", "turn": 2},
                {"role": None, "content": "Ben", "turn": 3},
            ],
        ],
        "lists": [[["[PERSON]", "x"], [], None], None, [[]], [["Ben"]]],
    }
