"""Finishing a release of partitioned tables one file slice at a time, so no step holds a whole
dataset. A slice is the partitions of one landing batch whose shards share files: shards 0–3 of
batch 0 are slice `b00000-p000`, 4–7 `b00000-p001` (PARTITIONS_PER_FILE), a count fixed when the
batch's groups are placed, so a change to a few partitions rewrites only their slices' files, never
a whole batch's. A slice's files are cut by split, the split read from each row (`split`), not
from the partition's key: one file per (split, slice), so a partition may hold rows of several
splits. Each slice's privatized rows are put in release order file by file (batch_sort.py),
written to the slice's files in a staging folder (or hard-linked from the previous release when
equal, or when the slice's inputs are those of the previous release, without ordering them again
nor reading them back: batch_files.py, reused_slices.py) and counted into mergeable aggregates:
the content-hash sums and the card's figures (card_stats.py). `write_release` then moves the
staged files into the release.

The release order is a total order on a row's values (sha256 of its id, then every flat column,
then the order rows came in): each file's rows are its slice's rows of the whole dataset in
release order, and the content hash and the card are what a whole-dataset finish gives. A file's
bytes are its rows written from one compact frame (not a slice of a bigger one: Polars' Parquet
pages follow the memory a frame points into), so they do not depend on how a slice's rows were
cut into partitions."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from pipelines.release.build.batch_files import (
    Previous,
    Totals,
    add_hashed,
    add_to_totals,
    slice_inputs,
    totals_hash,
    write_or_link,
)
from pipelines.release.build.batch_sort import files_in_order
from pipelines.release.build.card_stats import FrameStats
from pipelines.release.build.order import canonical_order, shuffled_order
from pipelines.release.build.reused_slices import (
    FileFigures,
    figures_of,
    reused_slice,
    save_figures,
)
from pipelines.release.store.files import PARTITIONS_PER_FILE, SPLIT_ORDER

BATCH = "_batch"  # the landing batch of a row's partition, until the files are written
EMPTY_FILE = "{split}-empty.parquet"  # the file of a configured split without rows (no batch)


@dataclass(frozen=True)
class Source:
    """One partition's rows of one dataset: loaded only when its slice is finished."""

    batch: int
    schema: pl.Schema  # with BATCH
    load: Callable[[], pl.DataFrame]  # rows with BATCH
    slice: int = 0  # its partition's shard // PARTITIONS_PER_FILE (the split is each row's)
    identity: str | None = None  # digest of its rows (None: unknown without loading them)
    read: Callable[[list[str]], pl.DataFrame] | None = None  # `columns`, the others not read

    def columns(self, names: list[str]) -> pl.DataFrame:
        """`load().select(names)`; without reading its other columns when `read` is given."""
        return self.load().select(names) if self.read is None else self.read(names)

    @property
    def cut(self) -> str:
        """The file slice, as file names carry it: `b00000-p001`."""
        return f"b{self.batch:05d}-p{self.slice:03d}"


def slice_of_partition(key: str) -> int:
    """The file slice index of partition `key` within its batch (`b00003-s05`: 1; see the
    module doc); 0 for a key without a shard (a table stored whole)."""
    _, _, shard = key.rpartition("-s")
    return int(shard) // PARTITIONS_PER_FILE if shard.isdigit() else 0


def slice_index(partition: pl.Expr) -> pl.Expr:
    """`slice_of_partition(key)[1]` of a column of partition keys (null for a key of no shard)."""
    return partition.str.extract(r"-s(\d+)$").cast(pl.Int64) // PARTITIONS_PER_FILE


@dataclass
class Staged:
    folder: Path  # <folder>/<dataset>/<file>
    names: list[str]  # every dataset, also those without rows
    files: dict[str, list[dict]] = field(default_factory=dict)  # dataset -> manifest entries
    file_batches: dict[str, list[int]] = field(default_factory=dict)  # each file's batch
    totals: Totals = field(default_factory=dict)
    stats: dict[str, FrameStats] = field(default_factory=dict)
    schemas: dict[str, pl.Schema] = field(default_factory=dict)  # every dataset's columns
    entries: list[str] = field(default_factory=list)  # the part store's slice figures it used
    moved_to: Path | None = None  # the release folder the files were moved into

    def content_hash(self, config: dict) -> str:
        return totals_hash(self.totals, config)

    def move_into(self, tmp: Path) -> dict[str, list[dict]]:
        """Move every dataset folder into the release folder `tmp`; its file layout."""
        for name in sorted(self.files):
            shutil.move(self.folder / name, tmp / name)
        self.moved_to = tmp
        return {name: self.files[name] for name in sorted(self.files)}

    def whole(self, name: str) -> pl.DataFrame:
        """A dataset's rows in release order, read back from its staged files (release profiles
        filter whole datasets; only a release with profiles holds one)."""
        entries = self.files.get(name, [])
        if not entries:
            return pl.DataFrame(schema=self.schemas[name])
        order = sorted(zip(self.file_batches[name], range(len(entries)), strict=True))
        frames = [
            pl.read_parquet(
                (self.moved_to or self.folder) / name / entries[i]["file"]
            ).with_columns(pl.lit(batch, pl.Int64).alias(BATCH))
            for batch, i in order
        ]
        return _in_release_order(name, pl.concat(frames)).drop(BATCH)

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def unified_schema(schemas: list[pl.Schema]) -> pl.Schema:
    """The schema a relaxed concatenation of frames of these schemas has."""
    distinct: list[pl.Schema] = []  # one frame per distinct schema, not per partition
    for schema in schemas:
        if schema not in distinct:
            distinct.append(schema)
    return pl.concat([pl.DataFrame(schema=s) for s in distinct], how="vertical_relaxed").schema


def _in_release_order(name: str, frame: pl.DataFrame) -> pl.DataFrame:
    return shuffled_order(name, canonical_order(frame))


def _slices(sources: list[Source]) -> list[tuple[int, int]]:
    return sorted({(s.batch, s.slice) for s in sources})


def _slice_files(
    staged: Staged,
    name: str,
    mine: list[Source],
    schema: pl.Schema,
    previous: dict[str, Previous],
    store: Path | None,
) -> Iterator[tuple[FileFigures, pl.DataFrame | None, str | None]]:
    """(figures, its columns when its rows were at hand, inputs) of each file of one slice:
    linked whole and counted from the part store when its inputs are the previous release's
    (reused_slices.py), else put in order, written or linked, and its figures kept there."""
    folder = staged.folder / name
    inputs = slice_inputs(name, mine[0].cut, schema, [s.identity for s in mine])
    folder.mkdir(parents=True, exist_ok=True)
    reused = reused_slice(name, inputs, folder, previous, store)
    if reused is not None:
        figures, entry = reused
        staged.entries += [entry] if entry else []
        for figure in figures:
            yield figure, None, inputs
        return
    spill = folder.parent / f".spill-{name}"
    loads = [s.load for s in mine]
    reads = [s.columns for s in mine]
    written = []
    for split, file, rows in files_in_order(name, loads, schema, mine[0].cut, spill, reads):
        part = rows.drop(BATCH)
        del rows
        figure = figures_of(file, part, split)
        rel = f"{name}/{file}"
        write_or_link(part, folder / file, rel, previous, figure.hashed.rows_digest)
        written.append(figure)
        yield figure, part.head(0), inputs
        del part  # not held while the next file is put together
    entry = save_figures(store, inputs, folder, written) if inputs else None
    staged.entries += [entry] if entry else []


def _stage_dataset(
    staged: Staged,
    name: str,
    sources: list[Source],
    previous: dict[str, Previous],
    empty: tuple[tuple[str, ...], Callable[[], pl.Schema | None]],
    store: Path | None,
) -> None:
    schema = unified_schema([s.schema for s in sources])
    staged.schemas[name] = pl.Schema({c: t for c, t in schema.items() if c != BATCH})
    folder = staged.folder / name
    for batch, index in _slices(sources):
        mine = [s for s in sources if (s.batch, s.slice) == (batch, index)]
        for figure, columns, inputs in _slice_files(staged, name, mine, schema, previous, store):
            if name not in staged.stats:
                if columns is None:  # a linked file: its columns, not its rows
                    columns = pl.read_parquet(folder / figure.file, n_rows=0)
                staged.stats[name] = FrameStats(columns.schema, columns.to_arrow().schema)
            staged.stats[name].add_counts(figure.split, figure.counts)
            staged.stats[name].missing_margin += figure.missing_margin
            add_hashed(staged.totals, name, figure.split, figure.hashed)
            entry = {"split": figure.split, "file": figure.file, "rows": figure.hashed.rows}
            entry |= {"rows_digest": figure.hashed.rows_digest}
            entry |= {"inputs": inputs} if inputs else {}
            staged.files.setdefault(name, []).append(entry)
            staged.file_batches.setdefault(name, []).append(batch)
    _stage_empty_splits(staged, name, folder, previous, *empty)
    if name in staged.files:  # in file order: by split (train first), then batch and slice
        _in_file_order(staged, name)
    elif folder.is_dir():
        shutil.rmtree(folder)  # no rows and no split asked for: no folder


def _stage_empty_splits(
    staged: Staged,
    name: str,
    folder: Path,
    previous: dict[str, Previous],
    splits: tuple[str, ...],
    schema_of: Callable[[], pl.Schema | None],
) -> None:
    """An empty file (`EMPTY_FILE`) for each of `splits` the dataset has no rows in, so a script
    that loads or queries it by name finds it every night: with the dataset's columns when it has
    rows elsewhere, else `schema_of()` (the builders' schema, schemas.py; asked for only then:
    making it runs every builder on empty tables). Counted into the content hash as a (dataset,
    split, schema) of 0 rows: a release that gains one is a new release."""
    present = {entry["split"] for entry in staged.files.get(name, [])}
    missing = [split for split in splits if split not in present]
    if not missing:
        return
    schema = None if present else schema_of()
    columns = staged.schemas[name] if schema is None else schema
    staged.schemas[name] = columns
    part = pl.DataFrame(schema=columns)
    folder.mkdir(parents=True, exist_ok=True)
    if name not in staged.stats:
        staged.stats[name] = FrameStats(part.schema, part.to_arrow().schema)
    for split in missing:
        file = EMPTY_FILE.format(split=split)
        digest, _ = write_or_link(part, folder / file, f"{name}/{file}", previous)
        staged.stats[name].add_empty(split)
        add_to_totals(staged.totals, name, split, part)
        entry = {"split": split, "file": file, "rows": 0, "rows_digest": digest}
        staged.files.setdefault(name, []).append(entry)
        staged.file_batches.setdefault(name, []).append(0)


def _in_file_order(staged: Staged, name: str) -> None:
    entries = staged.files[name]
    names = [f["file"] for f in entries]
    if len(set(names)) != len(names):
        raise ValueError(f"{name}: two file slices gave the same file name")
    present = {f["split"] for f in entries}
    splits = [s for s in SPLIT_ORDER if s in present] + sorted(present - set(SPLIT_ORDER))
    order = sorted(
        range(len(entries)), key=lambda i: (splits.index(entries[i]["split"]), entries[i]["file"])
    )
    staged.files[name] = [entries[i] for i in order]
    staged.file_batches[name] = [staged.file_batches[name][i] for i in order]


def stage(
    sources: dict[str, list[Source]],
    folder: Path,
    previous: dict[str, Previous],
    splits: tuple[str, ...] = (),
    schemas: Callable[[], dict[str, pl.Schema]] = dict,
    store: Path | None = None,
) -> Staged:
    """Every dataset's files, slice by slice, under `folder` (see the module doc); `sources`:
    each dataset's partitions in partition order; `previous`: the newest release's files
    (`previous_files`) to hard-link when equal; `splits`: those every dataset has a file of,
    empty when it has no rows there, with its entry of `schemas()` as columns when it has none at
    all (schemas.py; called only for such a dataset); `store`: the release part store, where each
    slice's figures are kept (reused_slices.py; None: none kept, a linked slice is read back)."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    staged = Staged(folder, sorted(sources))
    try:
        for name in staged.names:
            empty = (splits, lambda name=name: schemas().get(name))
            _stage_dataset(staged, name, sources[name], previous, empty, store)
    except BaseException:
        staged.remove()
        raise
    return staged
