"""One file slice's rows of a dataset in release order, file by file, without holding the slice
(a slice: the partitions of one landing batch and split whose shards share a file, staged.py).

The release order (order.py) sorts by the row's primary key (sha256 of its id, and the
step in `rl_steps`), then by every flat column, then by arrival. Only rows whose primary key is
shared need the flat columns, so a first pass over the slice's partitions keeps just the primary
keys (and the flat columns of the rows that tie), sorts them and gives each row its file and its
place there; it reads only those columns of each partition (a stored partition's other columns,
its texts and chats, are not decoded then). A second pass cuts each partition into its files'
pieces, spilled to disk; each file is then its pieces put in place: memory holds one partition and
one file, not the slice (a slice of at most one file's rows is that file: its pieces stay in
memory)."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import polars as pl

from pipelines.release.build.order import (
    flat_columns,
    key_read_columns,
    release_key_columns,
    release_key_names,
)
from pipelines.release.store.files import SHARD_ROWS, SPLIT_ORDER

SRC, ROW, POS, TIE, FILE = "_src", "_row", "_pos", "_tie", "_file"
Load = Callable[[], pl.DataFrame]
Read = Callable[[list[str]], pl.DataFrame]  # some columns of a part's rows (staged.Source.columns)


def _selecting(load: Load) -> Read:
    return lambda names: load().select(names)


def _read_conformed(read: Read, schema: pl.Schema, names: list[str]) -> pl.DataFrame:
    """Columns `names` of a part, as `_conformed` gives them for the whole part."""
    wanted = pl.Schema({c: t for c, t in schema.items() if c in names})
    return _conformed(read(list(wanted)), wanted)


def _conformed(frame: pl.DataFrame, schema: pl.Schema) -> pl.DataFrame:
    """`frame` in the dataset's schema, as a relaxed concatenation with the other parts casts it."""
    if frame.schema == schema:  # the usual case: no concatenation per part and pass
        return frame
    frame = pl.concat([pl.DataFrame(schema=schema), frame], how="vertical_relaxed")
    differ = {c: t for c, t in schema.items() if frame.schema.get(c) != t}
    return frame.cast(differ) if differ else frame


def _primary(name: str, frame: pl.DataFrame, src: int) -> pl.DataFrame:
    """split, source, row and the primary key columns of every row of one part."""
    keys = release_key_columns(name, frame)
    exprs = {f"_k{i}": e for i, e in enumerate(keys)}
    return frame.select(
        "split",
        **exprs,
        **{SRC: pl.lit(src, pl.UInt32), ROW: pl.int_range(pl.len(), dtype=pl.UInt32)},
    )


def _tie_ranks(
    name: str, primary: pl.DataFrame, parts: list[Read], schema: pl.Schema
) -> pl.DataFrame:
    """SRC, ROW and TIE (the order among rows sharing a primary key) of the rows that tie."""
    keys = [c for c in primary.columns if c.startswith("_k")]
    tied = primary.filter(pl.len().over(keys) > 1) if keys else primary.clear()
    flat = [c for c in flat_columns(schema) if c not in release_key_names(name, schema)]
    if tied.height == 0 or not flat:  # no flat column: ties stay in the order they came in
        return pl.DataFrame(schema={SRC: pl.UInt32, ROW: pl.UInt32, TIE: pl.UInt32})
    pieces = []
    for src in tied.get_column(SRC).unique().sort().to_list():
        rows = tied.filter(pl.col(SRC) == src).select(SRC, ROW, *keys)
        frame = _read_conformed(parts[src], schema, flat).select(flat)
        pieces.append(pl.concat([rows, frame[rows.get_column(ROW)]], how="horizontal"))
    ordered = pl.concat(pieces).sort(
        [*keys, *flat, SRC, ROW],
        nulls_last=[False] * len(keys) + [True] * len(flat) + [False, False],
        maintain_order=True,
    )
    return ordered.select(SRC, ROW, pl.int_range(pl.len(), dtype=pl.UInt32).alias(TIE))


def file_names(split: str, cut: str, rows: int) -> list[str]:
    """`<split>-<cut>.parquet` (cut: `b00003-p001`, staged.py), or
    `<split>-<cut>-00000-of-00002.parquet` shards when the split has more than SHARD_ROWS rows."""
    stem = f"{split}-{cut}"
    if rows <= SHARD_ROWS:
        return [f"{stem}.parquet"]
    n = -(-rows // SHARD_ROWS)
    return [f"{stem}-{i:05d}-of-{n:05d}.parquet" for i in range(n)]


def placed_rows(
    name: str, parts: list[Load], schema: pl.Schema, cut: str, reads: list[Read] | None = None
) -> tuple[pl.DataFrame, list[tuple[str, str]]]:
    """(SRC, ROW, FILE, POS of every row, [(split, file name)] by FILE): each row's file and its
    place in it, in release order. `reads`: each part's columns read alone (default: selected
    from its `load()`)."""
    reads = reads or [_selecting(load) for load in parts]
    needed = key_read_columns(name, schema)
    primary = pl.concat(
        [_primary(name, _read_conformed(read, schema, needed), i) for i, read in enumerate(reads)]
    )
    keys = [c for c in primary.columns if c.startswith("_k")]
    ties = _tie_ranks(name, primary, reads, schema)
    ranked = primary.join(ties, on=[SRC, ROW], how="left").with_columns(pl.col(TIE).fill_null(0))
    ordered = ranked.sort([*keys, TIE, SRC, ROW], maintain_order=True) if keys else ranked
    present = set(ordered.get_column("split"))
    splits = [s for s in SPLIT_ORDER if s in present] + sorted(present - set(SPLIT_ORDER))
    files: list[tuple[str, str]] = []
    placed = []
    for split in splits:
        rows = ordered.filter(pl.col("split") == split).with_row_index(POS)
        names = file_names(split, cut, rows.height)
        placed.append(
            rows.select(SRC, ROW, (pl.col(POS) // SHARD_ROWS + len(files)).alias(FILE), POS)
        )
        files += [(split, f) for f in names]
    schema_out = {SRC: pl.UInt32, ROW: pl.UInt32, FILE: pl.Int64, POS: pl.UInt32}
    return pl.concat([pl.DataFrame(schema=schema_out), *placed], how="vertical_relaxed"), files


def files_in_order(
    name: str,
    parts: list[Load],
    schema: pl.Schema,
    cut: str,
    spill: Path,
    reads: list[Read] | None = None,
) -> Iterator[tuple[str, str, pl.DataFrame]]:
    """(split, file name, rows) of one file slice (`cut`) of a dataset, in file order, each file's
    rows in release order and in `schema` (see the module doc). `spill`: a scratch folder,
    removed; `reads`: as for `placed_rows`. A slice of at most one file's rows (SHARD_ROWS, the
    usual case) keeps its pieces in memory: spilling them would bound memory by no less."""
    placed, files = placed_rows(name, parts, schema, cut, reads)
    held: dict[int, list[pl.DataFrame]] | None = {} if placed.height <= SHARD_ROWS else None
    shutil.rmtree(spill, ignore_errors=True)
    if held is None:
        spill.mkdir(parents=True)
    try:
        for file, src, piece in _pieces(placed, parts, schema):
            if held is not None:
                held.setdefault(file, []).append(piece)
                continue
            piece.write_ipc(spill / f"{file}-{src}.arrow", compression="lz4")
        del placed
        for i, (split, file) in enumerate(files):
            for_file = pl.concat(held.pop(i) if held is not None else _read_back(spill, i))
            ordered = for_file.sort(POS).drop(POS).rechunk()
            del for_file  # not held while the caller writes the file
            yield split, file, ordered
            del ordered
    finally:
        shutil.rmtree(spill, ignore_errors=True)


def _pieces(
    placed: pl.DataFrame, parts: list[Load], schema: pl.Schema
) -> Iterator[tuple[int, int, pl.DataFrame]]:
    """(file, part, piece): each part's rows cut into its files' pieces, with their place in the
    file (one part loaded at a time)."""
    for src, load in enumerate(parts):
        mine = placed.filter(pl.col(SRC) == src)
        if mine.height == 0:
            continue
        frame = _conformed(load(), schema)
        for (file,), rows in mine.partition_by(FILE, as_dict=True).items():
            yield file, src, frame[rows.get_column(ROW)].with_columns(rows.get_column(POS))
        del frame


def _read_back(spill: Path, file: int) -> list[pl.DataFrame]:
    """A file's spilled pieces, read and removed."""
    pieces = sorted(spill.glob(f"{file}-*.arrow"))
    frames = [pl.read_ipc(p) for p in pieces]
    for p in pieces:
        p.unlink()
    return frames
