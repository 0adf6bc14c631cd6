"""The redaction ledger counted per row. A release drops rows by global rules (a prompt kept only
in its earliest split, one of each exact duplicate, decontamination) that new data elsewhere
can change; privatizing a row does not depend on which rows are dropped, so a partition's rows are
privatized all of them, once, with the replacements of each row, and a release sums the ledger
over the rows it keeps (parts.py): what privatizing the kept rows alone counts."""

from __future__ import annotations

import polars as pl

from pipelines.privacy.text_leaves import tagged_leaves

ROW = "row"  # a row's index in its dataset as built (the key frame's `row`)
PSEUDONYM = "pseudonym"  # named in the ledger wherever there was text, even with no replacement


COLUMN = "column"  # a leaf's column: its index in the `columns` given to `row_leaves`


def row_leaves(frame: pl.DataFrame, columns: list[str]) -> pl.DataFrame:
    """(column, row, value) of every non-null string leaf of `columns`, however nested, one per
    occurrence (`column`: the index of its column in `columns`)."""
    indexed = frame.select(columns).with_row_index(ROW)
    schema = {COLUMN: pl.UInt16, ROW: pl.UInt32, "value": pl.String}
    parts = [pl.DataFrame(schema=schema)]
    for number, column in enumerate(columns):
        tagged = indexed.select(pl.lit(number, pl.UInt16).alias(COLUMN), ROW, value=pl.col(column))
        parts.extend(tagged_leaves(tagged))
    return pl.concat(parts).drop_nulls()


def leaf_rows(leaves: pl.DataFrame, height: int) -> pl.DataFrame:
    """(row) of each row of a frame of `height` rows with a leaf among `leaves` (row, …),
    ascending: each row marked, no row number hashed."""
    marks = pl.repeat(False, height, dtype=pl.Boolean, eager=True).scatter(
        leaves.get_column(ROW), True
    )
    return marks.arg_true().cast(pl.UInt32).alias(ROW).to_frame()


def touched_leaves(leaves: pl.DataFrame, cleaned: pl.DataFrame) -> pl.DataFrame:
    """The leaves of `leaves` (…, value) whose text `cleaned` (value, cleaned, one count column per
    kind) changes or counts a replacement in: all of them that `row_counts` and
    `changes_by_column` read, found by one search of every leaf's text instead of one each (at
    1 GB a fifteenth of the leaves)."""
    kinds = _kinds(cleaned)
    touched = pl.col("cleaned") != pl.col("value")
    if kinds:
        touched = touched | pl.any_horizontal(pl.col(k) > 0 for k in kinds)
    return leaves.join(cleaned.filter(touched).select("value"), on="value", how="semi")


def _kinds(counts: pl.DataFrame) -> list[str]:
    return [c for c, t in counts.schema.items() if c != "value" and t.is_integer()]


def row_counts(leaves: pl.DataFrame, counts: pl.DataFrame, rows: pl.DataFrame) -> pl.DataFrame:
    """(row, one Int64 column per kind) of every row of `rows` (`leaf_rows`: the rows with a
    string leaf): the replacements of its leaves among `leaves` (row, value; those `counts`
    counts a replacement in suffice: `touched_leaves`), a leaf counted as often as it occurs
    (`counts`: value, one count column per kind, other columns ignored). Only kinds some row has
    are columns."""
    kinds = _kinds(counts)
    hit = counts.filter(pl.any_horizontal(pl.col(k) > 0 for k in kinds)) if kinds else counts
    per_row = (
        leaves.join(hit.select("value", *kinds), on="value", how="inner")
        .group_by(ROW)
        .agg(pl.col(k).sum() for k in kinds)
    )
    present = [k for k in kinds if per_row.get_column(k).sum()]
    return with_hits(rows, per_row.select(ROW, *present))


def with_hits(rows: pl.DataFrame, hits: pl.DataFrame) -> pl.DataFrame:
    """`rows` (row, kinds…) with the count columns of `hits` (row, other kinds…: some of the
    rows) added, 0 for a row `hits` does not have."""
    if hits.height == 0:
        return rows
    joined = rows.join(hits, on=ROW, how="left", maintain_order="left")
    return joined.with_columns(pl.col(k).fill_null(0) for k in hits.columns if k != ROW)


def ledger_of(counts: pl.DataFrame) -> dict[str, int]:
    """A dataset's ledger from the row counts of the rows it holds: each kind's total (kinds
    without one left out), and `pseudonym` (0 without any) when a row has text."""
    if counts.height == 0:
        return {}
    kinds = [c for c in counts.columns if c != ROW]
    totals = counts.select(pl.col(k).sum() for k in kinds).row(0) if kinds else ()
    found = {kind: int(n) for kind, n in zip(kinds, totals, strict=True) if n}
    return dict(sorted(({PSEUDONYM: 0} | found).items()))
