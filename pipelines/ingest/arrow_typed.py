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

# Sources whose rows are built only by code that checks every value's type (study/records.py,
# study/fast.py); Arrow also takes bytes for strings and a string for a list, which they never hold.
ARROW_TYPED_SOURCES = frozenset({"study"})


@cache
def _arrow_schema(table: str) -> pa.Schema:
    return pl.DataFrame(schema=table_schema(table)).to_arrow().schema


def arrow_frame(rows: list[dict], table: str) -> pl.DataFrame:
    """Rows (dicts; missing keys are null) → a frame of the table's exact schema; raises when a
    value is not of its column's type."""
    return pl.from_arrow(pa.Table.from_pylist(rows, schema=_arrow_schema(table)))


class ArrowTypedBatch(Batch):
    """A batch whose parsed rows are typed through Arrow (the written parts are the same)."""

    def _typed_together(self) -> dict[str, list[pl.DataFrame]]:
        tables = {t for m in self.members for t in m.rows}
        try:
            return {
                t: [arrow_frame([r for m in self.members for r in m.rows.get(t, ())], t)]
                for t in tables
            }
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            return super()._typed_together()
