"""A large file's bronze rows kept as Arrow blocks while its adapter reads it (issue 15: peak RSS).

At 1 GB the study's master file is 91 MB of ~37 k sessions. As Python dicts (nested lists of
dicts, one str per text) its rows weigh about 3.5 times its bytes, typed as Arrow about 0.7 times:
all of them at once as dicts were the largest single item in a parse worker. `RowBlocks` takes the
rows one at a time and types each full block into an Arrow table of the table's bronze schema, so
a file's rows never all exist as dicts.

Read as a sequence it gives the rows back as dicts (a batch typed through Polars, the misfit
search, forgetting a subject); `ArrowTypedBatch` takes its blocks as they are. Only for adapters
whose rows are of exactly their contract's Python types (see `ingest/arrow_typed.py`); a block
that Arrow refuses stays dicts, and the batch's typing then finds what is wrong with it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import cache
from typing import Any, overload

import polars as pl
import pyarrow as pa

from pipelines.schemas import bronze_schema

BLOCK_ROWS = 2048

Block = pa.Table | list[dict[str, Any]]


@cache
def arrow_schema(table: str) -> pa.Schema:
    """The Arrow schema of a bronze table's contract."""
    return pl.DataFrame(schema=bronze_schema(table)).to_arrow().schema


def arrow_block(rows: list[dict[str, Any]], table: str) -> pa.Table:
    """Rows (dicts; missing keys are null) as an Arrow table of the table's exact schema; raises
    when a value is not of its column's type."""
    return pa.Table.from_pylist(rows, schema=arrow_schema(table))


class RowBlocks(Sequence[dict[str, Any]]):
    """The rows of one bronze table, appended one at a time, typed a block at a time."""

    def __init__(self, table: str, block_rows: int | None = None) -> None:
        self.table = table
        self.block_rows = block_rows or BLOCK_ROWS
        self._closed: list[Block] = []
        self._open: list[dict[str, Any]] = []
        self._len = 0

    def append(self, row: dict[str, Any]) -> None:
        self._open.append(row)
        self._len += 1
        if len(self._open) >= self.block_rows:
            self._closed.append(self._typed(self._open))
            self._open = []

    def _typed(self, rows: list[dict[str, Any]]) -> Block:
        try:
            return arrow_block(rows, self.table)
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            return rows

    def blocks(self) -> list[Block]:
        """The rows in order: Arrow tables, and lists of dicts (the rows of no full block yet, and
        a block Arrow refused)."""
        return [*self._closed, self._open] if self._open else list(self._closed)

    def as_built(self) -> Sequence[dict[str, Any]]:
        """These rows, or, when no block was typed (a small file), just their list of dicts."""
        return self if self._closed else self._open

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for block in self.blocks():
            yield from block.to_pylist() if isinstance(block, pa.Table) else block

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            return list(self)[index]
        # One row typed back from its block only (the misfit search looks rows up one by one).
        position = index + self._len if index < 0 else index
        if not 0 <= position < self._len:
            raise IndexError(index)
        for block in self.blocks():
            if position < len(block):
                if isinstance(block, pa.Table):
                    return block.slice(position, 1).to_pylist()[0]
                return block[position]
            position -= len(block)
        raise AssertionError("blocks hold fewer rows than counted")  # pragma: no cover
