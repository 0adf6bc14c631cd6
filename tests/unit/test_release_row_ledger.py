"""A partition's rows are privatized all of them, with their replacements per row
(pipelines/release/privatize/row_ledger.py): the rows a release keeps, and their ledger summed
over them, are what privatizing those rows alone gives, whichever rows it drops."""

from __future__ import annotations

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from pipelines.privacy.known_name_redaction import redact_known_names_by_row
from pipelines.privacy.redact import RedactionConfig
from pipelines.release.privatize import privatize as privatize_module
from pipelines.release.privatize.partitions import kept_counts, kept_ledger
from pipelines.release.privatize.privatize import (
    cleaned_frame,
    finish_each,
    id_replacer,
    prepare,
    privatize,
)
from pipelines.release.privatize.row_ledger import (
    ROW,
    leaf_rows,
    ledger_of,
    row_counts,
    touched_leaves,
)

KEY = b"k" * 32
PID = "5ed9dc4f-6630-4cc5-8619-10584891a2ab"  # a subject id
MESSAGES = pl.List(pl.Struct({"role": pl.String, "content": pl.String}))
NAMES = pl.DataFrame({"episode_id": ["rl"], "name": ["Ben"]})  # Ben is known in episode rl only


def _rows() -> pl.DataFrame:
    mail = {"role": "user", "content": "mail x@example.com"}
    return pl.DataFrame(
        {
            "episode_id": ["rl", "rl", "chat", None, "chat"],
            "messages": [
                [{"role": "user", "content": "mail x@example.com, Ben"}],
                [mail, mail],
                [{"role": "user", "content": "Ben says hi"}],
                None,
                [{"role": "user", "content": f"I am {PID}"}],
            ],
        },
        schema={"episode_id": pl.String, "messages": MESSAGES},
    )


def _privatized_by_row(rows: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(privatized rows, replacements per row) of `rows` as the release privatizes them."""
    config = RedactionConfig()
    prepared = prepare({"sft": rows}, [PID], config, NAMES)
    cleaned = cleaned_frame(prepared.candidates, id_replacer(KEY, (PID,)), config, 1)
    ((_, frame, counts),) = finish_each(prepared, KEY, cleaned)
    return frame, counts


def test_replacements_are_counted_per_row_and_a_row_without_text_has_none():
    _, counts = _privatized_by_row(_rows())
    # by hand: row 0 an e-mail and Ben in his own episode; row 1 the e-mail twice; row 2 Ben
    # outside his episode (kept), text without a replacement; row 3 no string at all (absent); row 4
    # the subject id
    assert counts.select("row", "email", "known_name", "pseudonym").rows() == [
        (0, 1, 1, 0),
        (1, 2, 0, 0),
        (2, 0, 0, 0),
        (4, 0, 0, 1),
    ]


def test_a_dataset_privatized_in_row_slices_keeps_each_rows_counts_and_text(monkeypatch):
    whole, whole_counts = _privatized_by_row(_rows())
    monkeypatch.setattr(privatize_module, "SLICE_BYTES", 1)  # one row a slice
    sliced, counts = _privatized_by_row(_rows())
    # the hand counts of the test above, each in its own row
    assert counts.select("row", "email", "known_name", "pseudonym").rows() == [
        (0, 1, 1, 0),
        (1, 2, 0, 0),
        (2, 0, 0, 0),
        (4, 0, 0, 1),
    ]
    assert counts.columns == whole_counts.columns
    assert_frame_equal(sliced, whole)


@pytest.mark.parametrize(
    ("kept", "ledger"),
    [
        ([1, 2, 3, 4], {"email": 2, "pseudonym": 1}),
        ([0], {"email": 1, "known_name": 1, "pseudonym": 0}),
        ([2, 3], {"pseudonym": 0}),  # text, nothing replaced: the kind named, 0
        ([3], {}),  # no text: nothing named
        ([], {}),
    ],
)
def test_the_ledger_and_rows_kept_are_those_of_the_kept_rows_privatized_alone(kept, ledger):
    frame, counts = _privatized_by_row(_rows())
    mask = pl.Series([i in kept for i in range(frame.height)])
    alone, alone_counts = _privatized_by_row(_rows().filter(mask))
    assert ledger_of(counts.filter(pl.col("row").is_in(kept))) == ledger
    assert ledger_of(alone_counts) == ledger
    assert_frame_equal(frame.filter(mask), alone)


def test_privatize_sums_the_rows_ledger():
    """`privatize` (the survey dataset's path) gives the ledger summed over its rows."""
    done = privatize({"sft": _rows()}, {}, KEY, RedactionConfig(), ids=[PID])
    # by hand: no names without silver; the e-mail 3 times, the subject id once
    assert done.ledger == {"sft": {"email": 3, "pseudonym": 1}}


def test_known_names_are_counted_in_the_row_they_are_replaced_in():
    frame = pl.DataFrame(
        {
            "episode_id": ["e1", "e2", "e1", "e1"],
            "text": ["Hope so, Hope.", "Hope so.", "no name", "Hope."],
        }
    )
    names = pl.DataFrame({"episode_id": ["e1"], "name": ["Hope"]})
    out, hits = redact_known_names_by_row(frame, ["text"], frame["episode_id"], names)
    redacted = ["[PERSON] so, [PERSON].", "Hope so.", "no name", "[PERSON]."]
    assert out.get_column("text").to_list() == redacted
    assert hits.rows() == [(0, 2), (3, 1)]  # by hand: e2 does not know the name


def test_the_release_ledger_sums_the_kept_rows_of_every_partition():
    def counts(rows: list[tuple]) -> pl.DataFrame:
        schema = {"dataset": pl.String, "row": pl.UInt32, "email": pl.Int64, "pseudonym": pl.Int64}
        return pl.DataFrame(rows, schema=schema, orient="row")

    p1 = counts([("sft", 0, 1, 0), ("sft", 1, 0, 2), ("kto", 0, 0, 0)])
    p2 = counts([("sft", 0, 3, 0)])
    keep_p1 = {"sft": pl.Series([True, False]), "kto": pl.Series([False])}  # sft row 1: 2 ids
    keep_p2 = {"sft": pl.Series([True, True])}  # its row 1 has no text: no counts row
    ledger = kept_ledger([kept_counts(p1, keep_p1), kept_counts(p2, keep_p2)])
    # by hand: sft's kept rows hold the e-mail 1 + 3 times; kto's one row with text is dropped
    assert ledger["sft"] == {"email": 4, "pseudonym": 0}
    assert ledger["kto"] == {} and ledger["rl_steps"] == {}


LEAVES = pl.DataFrame(
    {"column": [0, 0, 1, 1, 0], ROW: [0, 1, 1, 2, 3], "value": ["a", "b", "c", "a", "d"]},
    schema={"column": pl.UInt16, ROW: pl.UInt32, "value": pl.String},
)
# "a" changed with a pseudonym, "c" counted but (as no detector does) left as it was, "b" and "d"
# cleaned to themselves with nothing counted
CLEANED = pl.DataFrame(
    {
        "value": ["a", "b", "c", "d"],
        "cleaned": ["A", "b", "c", "d"],
        "pseudonym": [1, 0, 0, 0],
        "email": [0, 0, 2, 0],
    }
)


def test_touched_leaves_are_those_whose_text_is_changed_or_counted():
    touched = touched_leaves(LEAVES, CLEANED).sort(ROW, "column")
    assert touched.rows() == [(0, 0, "a"), (1, 1, "c"), (1, 2, "a")]


def test_touched_leaves_without_count_columns_are_the_changed_ones():
    cleaned = pl.DataFrame({"value": ["a", "b"], "cleaned": ["A", "b"]})
    assert touched_leaves(LEAVES, cleaned).get_column("value").to_list() == ["a", "a"]


def test_leaf_rows_are_each_row_holding_a_leaf_once_ascending():
    leaves = pl.DataFrame({ROW: [3, 0, 3, 5]}, schema={ROW: pl.UInt32})
    assert_frame_equal(
        leaf_rows(leaves, 7), pl.DataFrame({ROW: [0, 3, 5]}, schema={ROW: pl.UInt32})
    )


def test_row_counts_of_the_touched_leaves_keep_every_row_given():
    rows = pl.DataFrame({ROW: [0, 1, 2, 3]}, schema={ROW: pl.UInt32})
    counts = row_counts(touched_leaves(LEAVES, CLEANED), CLEANED, rows)
    # by hand: row 0 holds "a" (a pseudonym), row 1 "b" and "c" (2 e-mails), row 2 "a", row 3
    # "d" (none, still a row with text)
    expected = pl.DataFrame(
        {ROW: [0, 1, 2, 3], "pseudonym": [1, 0, 1, 0], "email": [0, 2, 0, 0]},
        schema={ROW: pl.UInt32, "pseudonym": pl.Int64, "email": pl.Int64},
    )
    assert_frame_equal(counts.select(expected.columns), expected)
