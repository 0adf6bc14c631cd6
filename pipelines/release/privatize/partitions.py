"""Pending release partitions privatized a batch at a time: each dataset of a batch's partitions
stacked into one frame, its texts gathered, gated, cleaned and put back in one pass however many
partitions it holds (the cost follows the rows, not the partitions), then cut back into each
partition's privatized datasets and their replacements per row, written to its store entry
(store/part_cache.py).

Every row of a partition as built is privatized, also those the global rules drop now. Which rows
those are changes with data elsewhere (a new exact duplicate with a smaller episode id, a prompt
now asked in an earlier split); privatizing a row does not depend on it, so the entry serves any
keep mask: the release drops the rows and sums the ledger over the kept ones (row_ledger.py).
Nor does it depend on the other partitions of its batch: every text is cleaned on its own, and a
known name is redacted in the rows of the episode that knows it, which lives in one partition.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from itertools import accumulate
from pathlib import Path

import polars as pl

from pipelines.exports.datasets import DATASETS
from pipelines.privacy.known_names import NAMES_SCHEMA
from pipelines.privacy.redact import RedactionConfig
from pipelines.release.privatize.known_names import KNOWN_NAMES
from pipelines.release.privatize.privatize import (
    cleaned_frame,
    finish_each,
    id_replacer,
    prepare,
)
from pipelines.release.privatize.row_ledger import PSEUDONYM, ROW
from pipelines.release.store import part_cache
from pipelines.storage.fingerprint import fingerprint, json_part

# Rows privatized in one batch (estimated in-memory size of its partitions' datasets as built): one
# pass over many small partitions, while memory holds one batch's rows (or one partition's). At
# 256 MB the 1 GB bench's release held 2 130 MB in its process tree; at 128 MB 1 970 MB, with the
# same release CPU (2026-11-29).
CHUNK_BYTES = 128 * 2**20


@dataclass(frozen=True)
class Privacy:
    key: bytes
    key_fingerprint: str
    redaction: RedactionConfig
    redaction_id: str  # `redaction_fingerprint` of `redaction`
    workers: int


def redaction_fingerprint(config: RedactionConfig) -> str:
    """Changes with the redaction config (a privatized partition's store key holds it)."""
    settings = {
        "org_names": sorted(config.org_names),
        "phone_regions": sorted(config.phone_regions),
        "kinds": sorted(config.kinds),
    }
    return fingerprint([json_part(settings)])[:20]


def ids_entry(ids: list[str]) -> str:
    return "ids-" + fingerprint([json_part(ids)])[:40]


ROW_LEDGER = "_row_ledger"  # a privatized entry's replacements per row: dataset, row, kinds…
LEDGER_SCHEMA = pl.Schema({"dataset": pl.String, ROW: pl.UInt32})  # and one column per kind


@dataclass(frozen=True)
class Pending:
    """A partition whose privatized entry must be made."""

    key: str
    entries: tuple[str, str]  # its built and privatized entry keys


def privatize_all(
    root: Path | None,
    pending: list[Pending],
    ids: list[str],
    privacy: Privacy,
    held: dict[str, dict[str, pl.DataFrame]],
) -> Iterator[tuple[str, pl.DataFrame, dict[str, pl.DataFrame]]]:
    """(partition, its replacements per row (ROW_LEDGER), its privatized rows) of every pending
    partition, privatized a batch (about CHUNK_BYTES of rows) at a time; the privatized rows are
    kept only when the store is off (`root` None)."""
    replacer = id_replacer(privacy.key, tuple(ids))
    for batch in _batches(root, pending, held):
        done = [p for p, _, _ in batch]
        units = [rows for _, rows, _ in batch]
        # an episode knows the same names in every unit holding it (units.py: the pairs' names)
        names = pl.concat([names for *_, names in batch]).unique().sort("episode_id", "name")
        # emptied, not just dropped (`_batches` holds it until asked for the next): the rows are
        # then held by their stacks alone, and each dataset's rows are let go once it is
        # privatized (finish_each), not when the whole batch is done
        batch.clear()
        stacks, datasets = _stacked(units)
        del units
        prepared = prepare(datasets, ids, privacy.redaction, names)
        del datasets, names
        cleaned = cleaned_frame(prepared.candidates, replacer, privacy.redaction, privacy.workers)
        prepared = replace(prepared, candidates=[])  # strings freed once cleaned
        entries = [part_cache.Writer(root, p.entries[1]) for p in done]
        counts: list[list[pl.DataFrame]] = [[pl.DataFrame(schema=LEDGER_SCHEMA)] for _ in done]
        privatized: list[dict[str, pl.DataFrame]] = [{} for _ in done]
        for stack, frame, rows in finish_each(prepared, privacy.key, cleaned):
            name, members = stacks[stack]
            for unit, start, height in members:
                part = frame.slice(start, height)
                entries[unit].write(name, part)
                mine = _rows_of(rows, start, height)
                counts[unit].append(mine.select(pl.lit(name).alias("dataset"), pl.all()))
                if root is None:
                    privatized[unit][name] = part
            del frame, part  # before the next dataset is privatized
        del prepared, cleaned  # before the next batch's rows are read
        for pending_unit, entry, parts, datasets in zip(
            done, entries, counts, privatized, strict=True
        ):
            ledger = pl.concat(parts, how="diagonal")
            ledger = ledger.with_columns(pl.all().exclude(LEDGER_SCHEMA.names()).fill_null(0))
            entry.write(ROW_LEDGER, ledger)
            entry.close({"ids": ids_entry(ids)})
            yield pending_unit.key, ledger, datasets


def _batches(
    root: Path | None, pending: list[Pending], held: dict[str, dict[str, pl.DataFrame]]
) -> Iterator[list[tuple[Pending, dict[str, pl.DataFrame], pl.DataFrame]]]:
    """The pending partitions with their rows as built and known names, in order, in batches of
    about CHUNK_BYTES of rows (one partition when it alone has more)."""
    batch: list[tuple[Pending, dict[str, pl.DataFrame], pl.DataFrame]] = []
    held_bytes = 0
    for p in pending:
        rows, names = _built_rows(root, p, held)
        batch.append((p, rows, names))
        held_bytes += sum(frame.estimated_size() for frame in rows.values())
        del rows, names  # held by the batch alone, which its caller lets go
        if held_bytes >= CHUNK_BYTES:
            yield batch
            batch, held_bytes = [], 0
    if batch:
        yield batch


Stacks = dict[str, tuple[str, list[tuple[int, int, int]]]]


def _stacked(units: list[dict[str, pl.DataFrame]]) -> tuple[Stacks, dict[str, pl.DataFrame]]:
    """Each dataset of `units` stacked into one frame per schema (units built from other shapes of
    rows may differ: an empty dataset, a column all null), in dataset order: (stack → (dataset,
    (unit, first row, rows) of each unit in it)), stack → its rows."""
    stacks: Stacks = {}
    frames: dict[str, pl.DataFrame] = {}
    for name in DATASETS:
        by_schema: dict[tuple, list[int]] = {}
        for unit, rows in enumerate(units):
            by_schema.setdefault(tuple(rows[name].schema.items()), []).append(unit)
        for number, members in enumerate(by_schema.values()):
            parts = [units[unit][name] for unit in members]
            starts = [0, *accumulate(part.height for part in parts)]
            stack = f"{name}/{number}"
            stacks[stack] = (name, [(u, starts[i], parts[i].height) for i, u in enumerate(members)])
            frames[stack] = pl.concat(parts)
    return stacks, frames


def _rows_of(rows: pl.DataFrame, start: int, height: int) -> pl.DataFrame:
    """A unit's replacements per row from its stack's (`rows`: ROW ascending), its rows counted
    from its first, with only the kinds it has (as privatizing it alone gives)."""
    index = rows.get_column(ROW)
    first, end = index.search_sorted(start), index.search_sorted(start + height)
    mine = rows.slice(first, end - first).with_columns((pl.col(ROW) - start).cast(pl.UInt32))
    return mine.select(c for c in mine.columns if c == ROW or mine.get_column(c).sum())


def _built_rows(
    root: Path | None, pending: Pending, held: dict[str, dict[str, pl.DataFrame]]
) -> tuple[dict[str, pl.DataFrame], pl.DataFrame]:
    """A pending partition's datasets as built, every row (let go on return), and the names its
    episodes know."""
    frames = (
        held.get(pending.key)
        or part_cache.load(root, pending.entries[0], [*DATASETS, KNOWN_NAMES])[1]
    )
    built = {name: frames[name] for name in DATASETS}
    return built, frames.get(KNOWN_NAMES, pl.DataFrame(schema=NAMES_SCHEMA))


KEPT_ROWS = "kept_rows"  # `kept_counts`: the dataset's kept rows with a string leaf


def kept_counts(rows: pl.DataFrame, keep: Mapping[str, pl.Series]) -> pl.DataFrame:
    """A unit's replacements summed over the rows the release keeps of it, one row per dataset:
    dataset, KEPT_ROWS and one column per kind. `rows`: its ROW_LEDGER; `keep`: dataset → each
    row's keep flag, in row order. Summed a unit at a time, so that the release never holds every
    row's counts (~1.2 M rows at 1 GB of raw data)."""
    sums = [pl.DataFrame(schema={"dataset": pl.String, KEPT_ROWS: pl.Int64})]
    for (name,), mine in rows.partition_by("dataset", as_dict=True).items():
        flags = keep.get(name, pl.Series([], dtype=pl.Boolean))
        kept = mine.filter(mine.get_column(ROW).is_in(flags.arg_true().cast(pl.UInt32)))
        totals = kept.drop("dataset", ROW).sum()
        sums.append(
            totals.select(
                pl.lit(name).alias("dataset"),
                pl.lit(kept.height, pl.Int64).alias(KEPT_ROWS),
                pl.all(),
            )
        )
    return pl.concat(sums, how="diagonal")


def kept_ledger(counts: list[pl.DataFrame]) -> dict[str, dict[str, int]]:
    """Each dataset's ledger over the rows the release keeps, from every unit's `kept_counts`."""
    total = pl.concat(counts, how="diagonal").fill_null(0).group_by("dataset").sum()
    by_name = {row["dataset"]: row for row in total.iter_rows(named=True)}
    ledger = {}
    for name in DATASETS:
        found = by_name.get(name, {KEPT_ROWS: 0})
        kinds = {k: int(n) for k, n in found.items() if k not in ("dataset", KEPT_ROWS) and n}
        ledger[name] = dict(sorted(({PSEUDONYM: 0} | kinds).items())) if found[KEPT_ROWS] else {}
    return ledger
