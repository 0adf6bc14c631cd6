"""Finishing a release of partitioned tables one landing batch at a time, so no step holds a
whole dataset: each batch's privatized rows are put in release order file by file
(batch_sort.py: a first build's only batch is the whole dataset), written to the batch's files
in a staging folder (or hard-linked from the previous release when equal, batch_files.py) and
counted into mergeable aggregates: the content-hash sums and the card's figures (card_stats.py).
`write_release` then moves the staged files into the release.

The release order is a total order on a row's values (sha256 of its id, then every flat column,
then the order rows came in), and rows come in partition order, which is batch-major: a batch's
rows in release order are exactly its rows of the whole dataset in release order. So each file's
rows, the content hash and the card are what a whole-dataset finish gives; a file's bytes are its
rows written from one compact frame (not a slice of a bigger one: Polars' Parquet pages follow
the memory a frame points into), so they do not depend on how rows were cut into partitions."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from pipelines.release.assemble_order import canonical_order, shuffled_order
from pipelines.release.batch_files import Totals, add_to_totals, totals_hash, write_or_link
from pipelines.release.batch_sort import files_in_order
from pipelines.release.card_stats import FrameStats
from pipelines.release.files import SPLIT_ORDER

BATCH = "_batch"  # the landing batch of a row's partition, until the files are written


@dataclass(frozen=True)
class Source:
    """One partition's rows of one dataset: loaded only when its batch is finished."""

    batch: int
    schema: pl.Schema  # with BATCH
    load: Callable[[], pl.DataFrame]  # rows with BATCH


@dataclass
class Staged:
    folder: Path  # <folder>/<dataset>/<file>
    names: list[str]  # every dataset, also those without rows
    files: dict[str, list[dict]] = field(default_factory=dict)  # dataset -> manifest entries
    file_batches: dict[str, list[int]] = field(default_factory=dict)  # each file's batch
    totals: Totals = field(default_factory=dict)
    stats: dict[str, FrameStats] = field(default_factory=dict)
    schemas: dict[str, pl.Schema] = field(default_factory=dict)  # every dataset's columns
    moved_to: Path | None = None  # the release folder the files were moved into

    def content_hash(self, config: dict) -> str:
        return totals_hash(self.totals, config)

    def move_into(self, tmp: Path) -> dict[str, list[dict]]:
        """Move every dataset folder with rows into the release folder `tmp`; its file layout."""
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


def _stage_dataset(
    staged: Staged, name: str, sources: list[Source], previous: dict[str, tuple[Path, str]]
) -> None:
    schema = unified_schema([s.schema for s in sources])
    staged.schemas[name] = pl.Schema({c: t for c, t in schema.items() if c != BATCH})
    folder = staged.folder / name
    for batch in sorted({s.batch for s in sources}):
        loads = [s.load for s in sources if s.batch == batch]
        spill = staged.folder / f".spill-{name}"
        for split, file, rows in files_in_order(name, loads, schema, batch, spill):
            part = rows.drop(BATCH)
            if name not in staged.stats:
                staged.stats[name] = FrameStats(part.schema, part.head(0).to_arrow().schema)
                folder.mkdir(parents=True)
            staged.stats[name].add(part)
            digest, _ = write_or_link(part, folder / file, f"{name}/{file}", previous)
            add_to_totals(staged.totals, name, split, part)
            entry = {"split": split, "file": file, "rows": part.height, "rows_digest": digest}
            staged.files.setdefault(name, []).append(entry)
            staged.file_batches.setdefault(name, []).append(batch)
            del rows, part  # not held while the next file is put together
    if name in staged.files:  # in file order: by split (train first), then batch and shard
        present = {f["split"] for f in staged.files[name]}
        splits = [s for s in SPLIT_ORDER if s in present] + sorted(present - set(SPLIT_ORDER))
        order = sorted(
            range(len(staged.files[name])),
            key=lambda i: (
                splits.index(staged.files[name][i]["split"]),
                staged.files[name][i]["file"],
            ),
        )
        staged.files[name] = [staged.files[name][i] for i in order]
        staged.file_batches[name] = [staged.file_batches[name][i] for i in order]


def stage(
    sources: dict[str, list[Source]], folder: Path, previous: dict[str, tuple[Path, str]]
) -> Staged:
    """Every dataset's files, batch by batch, under `folder` (see the module doc); `sources`:
    each dataset's partitions in partition order; `previous`: the newest release's files
    (`previous_files`) to hard-link when equal."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    staged = Staged(folder, sorted(sources))
    try:
        for name in staged.names:
            _stage_dataset(staged, name, sources[name], previous)
    except BaseException:
        staged.remove()
        raise
    return staged
