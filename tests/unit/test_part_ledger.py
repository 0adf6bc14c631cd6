"""The redaction ledger of a partition's kept rows, derived from the ledger of all its rows minus
what its dropped rows' strings count (pipelines/release/privatize/kept_ledger.py)."""

from __future__ import annotations

import polars as pl

from pipelines.release.privatize.kept_ledger import COUNTS as COUNTS_FRAME
from pipelines.release.privatize.kept_ledger import (
    LEFT_OUT,
    cached_kept_ledger,
    entry_key,
    kept_ledger,
    replacement_counts,
)
from pipelines.release.store import part_cache

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


def test_a_reused_entry_ledger_takes_off_the_rows_dropped_since_and_is_stored(tmp_path):
    # a built entry of three sft rows; the privatized entry left out row 0 and counted rows 1, 2
    # (four strings: each row's role and content)
    built = _rows("mail me at a@b.io", "I am p-1 at a@b.io", "plain")
    part_cache.save(tmp_path, "built", {}, {"sft": built})
    left_out = pl.DataFrame(
        {"dataset": ["sft"], "row": [0]}, schema={"dataset": pl.String, "row": pl.UInt32}
    )
    part_cache.save(tmp_path, "private", {}, {COUNTS_FRAME: COUNTS, LEFT_OUT: left_out})
    meta = {"ledger": {"sft": {"email": 1, "pseudonym": 1}}, "texts": {"sft": 4}}
    # now row 1 is dropped too
    keep = pl.DataFrame(
        {"dataset": ["sft"] * 3, "row": [0, 1, 2], "keep": [False, False, True]},
        schema={"dataset": pl.String, "row": pl.UInt32, "keep": pl.Boolean},
    )
    ledger = cached_kept_ledger(tmp_path, ("built", "private"), meta, keep, left_out)
    # by hand: row 1 held the entry's one email and one pseudonym; row 2 still holds text (4 > 2)
    assert ledger == {"sft": {"pseudonym": 0}}
    # stored under the rows dropped now, so the next release reads it instead of deriving it
    assert part_cache.load(tmp_path, entry_key("private", keep), names=())[0]["ledger"] == ledger


def test_replacement_counts_are_the_replaced_strings_of_any_dataset_in_cleaned_order():
    cleaned = pl.DataFrame(
        {
            "value": ["a@b.io", "plain", "p-1 here", "elsewhere c@d.io", "+1 555"],
            "cleaned": ["[EMAIL]", "plain", "x here", "elsewhere [EMAIL]", "[PHONE]"],
            "email": [1, 0, 0, 1, 0],
            "pseudonym": [0, 0, 1, 0, 0],
        }
    )
    sft = pl.Series("value", ["p-1 here", "plain"])
    kto = pl.Series("value", ["a@b.io", "not a candidate"])
    counts = replacement_counts([sft, kto], cleaned)
    # by hand: "plain" had no replacement, "elsewhere c@d.io" is another partition's string
    assert counts.rows() == [("a@b.io", 1, 0), ("p-1 here", 0, 1)]
    assert counts.columns == ["value", "email", "pseudonym"]
