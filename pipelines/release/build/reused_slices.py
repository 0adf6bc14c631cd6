"""A file slice the previous release already holds (batch_files.py: its inputs are the ones that
release recorded), linked into the new one and counted without reading its rows back.

What the content hash and the card count of a file (its rows' hash sums and digest, rows,
estimated bytes, distinct groups, labels, pairs without a margin: `FileFigures`) is computed once,
from the rows a slice's files are written from, and kept in the release part store
(store/part_cache.py) under the slice's inputs and the identity on disk (device, inode, size,
modification time) of each of its files. Staging moves the files into the release and the next
release hard-links them, so the same inodes come back: their figures are found, and a release that
reuses most slices reads none of their rows. A file that is not the one counted (copied to another
file system, rewritten in place) is read back and counted again, as before the figures were kept."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from pipelines.release.build.batch_files import HashedRows, Previous, hashed_rows, linked
from pipelines.release.build.card_stats import SplitCounts, missing_margins, split_counts
from pipelines.release.store import part_cache
from pipelines.storage.fingerprint import fingerprint

FILES, GROUPS = "files", "groups"  # the frames of a slice's entry


@dataclass(frozen=True)
class FileFigures:
    """What one release file (of one split) counts for, taken from its rows once."""

    file: str
    split: str
    hashed: HashedRows
    counts: SplitCounts
    missing_margin: int


def figures_of(file: str, rows: pl.DataFrame, split: str | None = None) -> FileFigures:
    """The figures of a file's rows, every row of one split (`split`; None: read from them)."""
    split = rows.get_column("split")[0] if split is None else split
    return FileFigures(file, split, hashed_rows(rows), split_counts(rows), missing_margins(rows))


def _entry(inputs: str, paths: list[Path]) -> str:
    """A slice's store entry: its inputs and which files on disk were counted."""
    on_disk = []
    for path in sorted(paths):
        info = path.stat()
        on_disk.append(f"{path.name}:{info.st_dev}:{info.st_ino}:{info.st_size}:{info.st_mtime_ns}")
    return fingerprint(["release slice figures", inputs, *on_disk])


def save_figures(
    store: Path | None, inputs: str, folder: Path, figures: list[FileFigures]
) -> str | None:
    """Keep the figures of a slice's files, just written or linked into `folder`; the entry."""
    if store is None or not figures:
        return None
    key = _entry(inputs, [folder / f.file for f in figures])
    files = pl.DataFrame(
        {
            "file": [f.file for f in figures],
            "split": [f.split for f in figures],
            "schema": [f.hashed.schema for f in figures],
            "rows": [f.hashed.rows for f in figures],
            "sum0": pl.Series([f.hashed.sums[0] for f in figures], dtype=pl.UInt64),
            "sum1": pl.Series([f.hashed.sums[1] for f in figures], dtype=pl.UInt64),
            "rows_digest": [f.hashed.rows_digest for f in figures],
            "num_bytes": pl.Series([f.counts.num_bytes for f in figures], dtype=pl.Int64),
            "grouped": [f.counts.groups is not None for f in figures],
            "label_len": pl.Series([_at(f.counts.labels, 0) for f in figures], dtype=pl.Int64),
            "label_true": pl.Series([_at(f.counts.labels, 1) for f in figures], dtype=pl.Int64),
            "missing_margin": pl.Series([f.missing_margin for f in figures], dtype=pl.Int64),
        }
    )
    groups = [
        pl.DataFrame({"file": [f.file] * len(f.counts.groups), "group_id": f.counts.groups})
        for f in figures
        if f.counts.groups
    ]
    frames = {FILES: files}
    if groups:
        frames[GROUPS] = pl.concat(groups, how="vertical_relaxed")
    part_cache.save(store, key, {}, frames)
    return key


def _at(pair: tuple[int, int] | None, i: int) -> int | None:
    return None if pair is None else pair[i]


def _stored_figures(store: Path | None, key: str) -> list[FileFigures] | None:
    meta, frames = part_cache.load(store, key)
    if not meta:
        return None
    groups: dict[str, list] = {}
    if GROUPS in frames:
        for (file,), rows in frames[GROUPS].group_by("file", maintain_order=True):
            groups[file] = rows.get_column("group_id").to_list()
    out = []
    for row in frames[FILES].iter_rows(named=True):
        labels = None if row["label_len"] is None else (row["label_len"], row["label_true"])
        counts = SplitCounts(
            row["rows"],
            row["num_bytes"],
            groups.get(row["file"], []) if row["grouped"] else None,
            labels,
        )
        hashed = HashedRows(
            row["schema"], row["rows"], (row["sum0"], row["sum1"]), row["rows_digest"]
        )
        out.append(FileFigures(row["file"], row["split"], hashed, counts, row["missing_margin"]))
    return sorted(out, key=lambda figure: figure.file)


def reused_slice(
    name: str,
    inputs: str | None,
    folder: Path,
    previous: dict[str, Previous],
    store: Path | None,
) -> tuple[list[FileFigures], str | None] | None:
    """(figures of each file, the store entry counting them) of the previous release's slice
    with these `inputs`, hard-linked into `folder/<dataset>/`; counted from the store when its
    files are the ones counted there, else read back (and kept for the next release). None when
    there is no such slice, or a file cannot be linked or does not read back as recorded (the
    slice is put in order)."""
    if inputs is None:
        return None
    olds = sorted(
        (rel.split("/", 1)[1], old)
        for rel, old in previous.items()
        if old.inputs == inputs and rel.startswith(f"{name}/")
    )
    if not olds:
        return None
    paths = []
    for file, old in olds:
        if not linked(old.path, folder / file):
            break
        paths.append(folder / file)
    else:
        key = _entry(inputs, paths)
        figures = _stored_figures(store, key)
        read_back = figures is None
        if figures is None:
            figures = [figures_of(path.name, pl.read_parquet(path)) for path in paths]
        recorded = [(file, old.rows_digest) for file, old in olds]
        if [(f.file, f.hashed.rows_digest) for f in figures] == recorded:
            return figures, save_figures(store, inputs, folder, figures) if read_back else key
    for path in paths:
        path.unlink()
    return None
