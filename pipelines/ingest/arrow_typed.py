"""Typing a batch of bronze rows through Arrow, for sources whose adapters build every row of
exactly its contract's Python types (str, int, float, aware datetime, lists of such dicts).

Polars' row constructor (`frame_from_rows`) walks nested rows in Python: for the study's sessions
(lists of history and IQL structs) it cost about 1 s per 10^4 sessions, as much as parsing them.
Arrow's converter builds the same columns in C, about ten times faster, and gives the same frame.
Arrow refuses any value of another type (where Polars with strict=False would cast it or the
misfit search would quarantine it): the batch is then typed as before, which finds the misfits.
The study's usual sessions come as value tuples (sources/study/columns.py), typed a column at a
time.
"""

from __future__ import annotations

from functools import cache

import polars as pl
import pyarrow as pa

from pipelines.ingest.batches import Batch, Member, table_schema
from pipelines.sources.row_blocks import RowBlocks
from pipelines.sources.study.columns import FastSessions

# Sources whose rows are built only by code that checks every value's type (study/records.py,
# study/fast.py, dialogue/records.py); Arrow also takes bytes for strings and a string for a list,
# which they never hold. Dialogue: typing a batch of conversations and events (nested turns)
# 0.60 → 0.30 s CPU per 45 k rows. Not decision: its rows are few and carry 30 KB context texts,
# which Arrow copies slower than Polars (0.12 → 0.54 s per 3 k rows).
ARROW_TYPED_SOURCES = frozenset({"study", "dialogue"})


@cache
def _arrow_schema(table: str) -> pa.Schema:
    return pl.DataFrame(schema=table_schema(table)).to_arrow().schema


def arrow_table(rows: list[dict], table: str) -> pa.Table:
    """Rows (dicts; missing keys are null) → an Arrow table of the table's exact schema; raises
    when a value is not of its column's type."""
    return pa.Table.from_pylist(rows, schema=_arrow_schema(table))


class ArrowTypedBatch(Batch):
    """A batch whose parsed rows are typed through Arrow (the written parts are the same)."""

    def _typed_together(self, members: list[Member]) -> dict[str, list[pl.DataFrame]]:
        tables = {t for m in members for t in m.rows}
        try:
            return {
                t: [pl.from_arrow(pa.concat_tables(self._arrow_pieces(t, members)))] for t in tables
            }
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            return super()._typed_together(members)

    def _arrow_pieces(self, table: str, members: list[Member]) -> list[pa.Table]:
        """The table's rows of every member in order. The blocks an adapter typed already
        (`RowBlocks`) are taken as they are; all the dicts, and all the study session tuples
        (`FastSessions`), are typed at once per kind (a batch's participant files alternate
        between the two: typed run by run, or as slices in place, thousands of small pieces cost
        more than the rows), then put back in the members' order as slices of runs."""
        typed: list[pa.Table] = []
        fast = FastSessions()
        loose: list[dict] = []
        places: list[tuple[str, int, int]] = []  # (kind, start, rows) in the members' order
        for member in members:
            rows = member.rows.get(table, ())
            for block in rows.blocks() if isinstance(rows, RowBlocks) else [rows]:
                if not len(block):
                    continue
                if isinstance(block, pa.Table):
                    places.append((f"typed{len(typed)}", 0, len(block)))
                    typed.append(block)
                elif isinstance(block, FastSessions):
                    places.append(("fast", len(fast), len(block)))
                    fast.values.extend(block.values)
                else:
                    places.append(("loose", len(loose), len(block)))
                    loose.extend(block)
        tables = {f"typed{i}": block for i, block in enumerate(typed)}
        if len(fast):
            tables["fast"] = fast.table()
        if loose:
            tables["loose"] = arrow_table(loose, table)
        if len(tables) <= 1:  # one kind: already in order
            return list(tables.values()) or [arrow_table([], table)]
        return [tables[kind].slice(start, n) for kind, start, n in _runs(places)]


def _runs(places: list[tuple[str, int, int]]) -> list[tuple[str, int, int]]:
    """Places that continue the one before them in the same kind, merged: a batch's sessions are
    almost all of one kind, so a few slices put them back in order (a `take` of every row copied
    the nested columns element by element: a quarter of typing a batch)."""
    runs: list[tuple[str, int, int]] = []
    for kind, start, n in places:
        if runs and runs[-1][0] == kind and sum(runs[-1][1:]) == start:
            runs[-1] = (kind, runs[-1][1], runs[-1][2] + n)
        else:
            runs.append((kind, start, n))
    return runs
