"""Strings rewritten by (row key, value) at any depth (pipelines/privacy/text_leaves.py)."""

from __future__ import annotations

import polars as pl

from pipelines.privacy.text_leaves import put_rows, replace_keyed_strings

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


def test_put_rows_replaces_the_rows_given_and_keeps_the_others_and_their_nulls():
    values = pl.Series("text", ["a", None, "c", "d", "e"])
    out = put_rows(values, pl.Series([1, 2, 4], dtype=pl.UInt32), pl.Series(["B", "C", None]))
    assert out.name == "text"
    assert out.to_list() == ["a", "B", "C", "d", None]
    assert values.to_list() == ["a", None, "c", "d", "e"]  # the column given is not changed


def test_put_rows_puts_nested_rows_back_in_their_places_runs_and_ends_too():
    values = pl.Series("lists", [["a"], [], None, ["d", "e"], ["f"]])
    rows = pl.Series([0, 2, 3], dtype=pl.UInt32)  # the first row, then a run of two
    out = put_rows(values, rows, pl.Series([["A"], ["C"], None]))
    assert out.name == "lists"
    assert out.dtype == pl.List(pl.String)
    assert out.to_list() == [["A"], [], ["C"], None, ["f"]]
    last = put_rows(values, pl.Series([4], dtype=pl.UInt32), pl.Series([["F", "G"]]))
    assert last.to_list() == [["a"], [], None, ["d", "e"], ["F", "G"]]
