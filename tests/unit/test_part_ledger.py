"""The redaction ledger of a partition's kept rows, derived from the ledger of all its rows minus
what its dropped rows' strings count (pipelines/release/part_ledger.py)."""

from __future__ import annotations

import polars as pl

from pipelines.release.part_ledger import kept_ledger

MESSAGES = pl.List(pl.Struct({"role": pl.String, "content": pl.String}))
COUNTS = pl.DataFrame(
    {
        "value": ["mail me at a@b.io", "I am p-1", "I am p-1 at a@b.io"],
        "email": [1, 0, 1],
        "pseudonym": [0, 1, 1],
    }
)


def _rows(*contents: str) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "messages": [[{"role": "user", "content": c}] for c in contents],
            "prompt_hash": ["h"] * len(contents),  # keyed apart, never counted
        },
        schema={"messages": MESSAGES, "prompt_hash": pl.String},
    )


def test_the_dropped_rows_replacements_are_taken_off_and_spent_kinds_left_out():
    whole = {"sft": {"email": 2, "pseudonym": 3}, "kto": {"pseudonym": 0}}
    dropped = {"sft": _rows("I am p-1 at a@b.io", "no replacement here"), "kto": _rows()}
    ledger = kept_ledger(whole, {"sft": 6, "kto": 1}, dropped, COUNTS)
    # by hand: the dropped sft rows hold one email and one pseudonym; kto dropped nothing
    assert ledger == {"sft": {"email": 1, "pseudonym": 2}, "kto": {"pseudonym": 0}}


def test_a_repeated_dropped_string_counts_every_time_and_an_emptied_kind_goes():
    whole = {"sft": {"email": 2, "pseudonym": 1}}
    dropped = {"sft": _rows("mail me at a@b.io", "mail me at a@b.io")}
    # by hand: both emails were in the dropped rows; the kept rows still hold text (5 > 2)
    assert kept_ledger(whole, {"sft": 5}, dropped, COUNTS) == {"sft": {"pseudonym": 1}}


def test_a_dataset_whose_every_string_is_dropped_names_no_pseudonym_count():
    whole = {"sft": {"pseudonym": 0}}
    dropped = {"sft": _rows("plain", "words")}
    # by hand: both strings of the dataset are dropped, so no kept row has text
    assert kept_ledger(whole, {"sft": 2}, dropped, COUNTS) == {"sft": {}}
