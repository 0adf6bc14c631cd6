"""Typing a batch of bronze rows through Arrow, for sources whose adapters build every row of
exactly its contract's Python types (str, int, float, aware datetime, lists of such dicts).

Polars' row constructor (`frame_from_rows`) walks nested rows in Python: for the study's sessions
(lists of history and IQL structs) it cost about 1 s per 10^4 sessions, as much as parsing them.
Arrow's converter builds the same columns in C, about ten times faster, and gives the same frame.
Arrow refuses any value of another type (where Polars with strict=False would cast it or the
misfit search would quarantine it): the batch is then typed as before, which finds the misfits.
"""

from __future__ import annotations

from functools import cache

import polars as pl
import pyarrow as pa

from pipelines.ingest.batches import Batch, table_schema
from pipelines.sources.row_blocks import RowBlocks
from pipelines.sources.study.columns import FastSessions

# Sources whose rows are built only by code that checks every value's type (study/records.py,
# study/fast.py); Arrow also takes bytes for strings and a string for a list, which they never hold.
ARROW_TYPED_SOURCES = frozenset({"study"})


@cache
def _arrow_schema(table: str) -> pa.Schema:
    return pl.DataFrame(schema=table_schema(table)).to_arrow().schema


def arrow_table(rows: list[dict], table: str) -> pa.Table:
    """Rows (dicts; missing keys are null) → an Arrow table of the table's exact schema; raises
    when a value is not of its column's type."""
    return pa.Table.from_pylist(rows, schema=_arrow_schema(table))


class ArrowTypedBatch(Batch):
    """A batch whose parsed rows are typed through Arrow (the written parts are the same)."""

    def _typed_together(self) -> dict[str, list[pl.DataFrame]]:
        tables = {t for m in self.members for t in m.rows}
        try:
            return {t: [pl.from_arrow(pa.concat_tables(self._arrow_pieces(t)))] for t in tables}
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            return super()._typed_together()

    def _arrow_pieces(self, table: str) -> list[pa.Table]:
        """The table's rows of every member in order: the blocks an adapter typed already
        (`RowBlocks`) as they are; the runs of dicts, and of study session tuples
        (`FastSessions`), between them typed here, each run at once."""
        pieces: list[pa.Table] = []
        loose: list[dict] = []
        fast = FastSessions()

        def flush() -> None:
            nonlocal loose, fast
            if loose:
                pieces.append(arrow_table(loose, table))
            if len(fast):
                pieces.append(fast.table())
            loose, fast = [], FastSessions()

        for member in self.members:
            rows = member.rows.get(table, ())
            for block in rows.blocks() if isinstance(rows, RowBlocks) else [rows]:
                if isinstance(block, pa.Table):
                    flush()
                    pieces.append(block)
                elif isinstance(block, FastSessions):
                    if loose:
                        flush()
                    fast.values.extend(block.values)
                else:
                    if len(fast):
                        flush()
                    loose.extend(block)
        flush()
        return pieces or [arrow_table([], table)]
