"""A study file's sessions kept as value tuples (the fast path's, `fast.session_values`) until a
batch types them into Arrow a column at a time (issue 15: the study part against the pandas peer).

As row dicts (a dict per session, per history entry, per IQL step and per q-value), a session cost
more to build than to parse, and Arrow's row converter then walked every dict again. Tuples are
cheaper to build, and a batch's tuples become columns by transposition (`zip`) and flat lists,
which Arrow converts in C. `session_table` gives exactly the table `pa.Table.from_pylist` gives
for the same sessions as dicts (tests/unit/test_study_columns.py).

`SessionRows` is a `RowBlocks` whose rows may be such tuples: read as a sequence it still gives
dicts (`fast.as_row`), for the batch's fallbacks (Polars typing, the misfit search, forgetting a
subject); a session of another shape stays the per-record path's dict.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import accumulate, chain
from typing import Any

import pyarrow as pa

from pipelines.sources.row_blocks import RowBlocks, arrow_schema
from pipelines.sources.study.fast import as_row

SESSIONS = "study_sessions"
PLACE = ("file", "locator", "copy_kind")  # a row's first columns; then fast.SESSION_VALUES


class FastSessions(Sequence[dict[str, Any]]):
    """Sessions as (file, locator, copy_kind, *session_values) tuples."""

    def __init__(self, values: list[tuple] | None = None) -> None:
        self.values: list[tuple] = values if values is not None else []

    def __len__(self) -> int:
        return len(self.values)

    def __getitem__(self, index):  # type: ignore[override] (an int or a slice, as a list's)
        if isinstance(index, slice):
            return [_row(v) for v in self.values[index]]
        return _row(self.values[index])

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return (_row(v) for v in self.values)

    def table(self) -> pa.Table:
        return session_table(self.values)


def _row(values: tuple) -> dict[str, Any]:
    place = len(PLACE)
    return {**dict(zip(PLACE, values[:place], strict=True)), **as_row(values[place:])}


def session_table(values: Sequence[tuple]) -> pa.Table:
    """Session tuples as an Arrow table of the study_sessions contract."""
    schema = arrow_schema(SESSIONS)
    return pa.Table.from_arrays(_arrays(values, list(schema)), schema=schema)


def _arrays(rows: Sequence[tuple], fields: list[pa.Field]) -> list[pa.Array]:
    """One array per field from tuples holding the fields' values in order; a last field named
    `extra` (the row's and every struct's but the q-values') is not in the tuples: all null."""
    n = len(rows)
    given = fields[:-1] if fields[-1].name == "extra" else fields
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(given)
    arrays = []
    for field, values in zip(given, columns, strict=True):
        if pa.types.is_large_list(field.type):
            arrays.append(_lists(values, field.type))
        else:
            arrays.append(pa.array(values, type=field.type))
    return arrays + [pa.nulls(n, field.type) for field in fields[len(given) :]]


def _lists(lists: Sequence[list[tuple]], list_type: pa.LargeListType) -> pa.Array:
    """Lists of tuples as a large list of structs."""
    offsets = pa.array([0, *accumulate(map(len, lists))], type=pa.int64())
    flat = list(chain.from_iterable(lists))
    struct = list_type.value_type
    children = _arrays(flat, list(struct))
    values = pa.StructArray.from_arrays(children, fields=list(struct))
    return pa.LargeListArray.from_arrays(offsets, values, type=list_type)


class SessionRows(RowBlocks):
    """A file's study sessions: fast-path tuples (`append_values`) and per-record dicts
    (`append`), in order; a full block of either typed into Arrow as it fills."""

    def __init__(self, block_rows: int | None = None) -> None:
        super().__init__(SESSIONS, block_rows)

    def append_values(self, values: tuple) -> None:
        if not isinstance(self._open, FastSessions):
            self._close_open()
            self._open = FastSessions()  # type: ignore[assignment] (a sequence of rows too)
        self._open.values.append(values)
        self._len += 1
        if len(self._open) >= self.block_rows:
            self._closed.append(self._typed_values(self._open))
            self._open = FastSessions()  # type: ignore[assignment]

    def append(self, row: dict[str, Any]) -> None:
        if isinstance(self._open, FastSessions):
            self._close_open()
            self._open = []
        super().append(row)

    def _close_open(self) -> None:
        if len(self._open):
            self._closed.append(self._open)  # a partial block: the batch types it with others
        self._open = []

    def _typed_values(self, sessions: FastSessions) -> pa.Table | FastSessions:
        try:
            return sessions.table()
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            return sessions

    def as_built(self) -> SessionRows:
        return self  # never dicts: the batch types the tuples with its other files' at once

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment] (mutable, compared by its rows)
