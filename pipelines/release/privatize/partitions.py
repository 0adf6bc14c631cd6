"""Pending release partitions privatized: their rows prepared one by one, their candidate texts
cleaned together in chunks (enough texts for the redactor's worker processes), each partition's
privatized datasets and their replacements per row written to its store entry
(store/part_cache.py) one at a time and let go.

Every row of a partition as built is privatized, also those the global rules drop now. Which rows
those are changes with data elsewhere (a new exact duplicate with a smaller episode id, a prompt
now asked in an earlier split); privatizing a row does not depend on it, so the entry serves any
keep mask: the release drops the rows and sums the ledger over the kept ones (row_ledger.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import polars as pl

from pipelines.exports.datasets import DATASETS
from pipelines.partitions.assign import PARTITION
from pipelines.privacy.known_names import NAMES_SCHEMA
from pipelines.privacy.redact import RedactionConfig
from pipelines.release.privatize.known_names import KNOWN_NAMES
from pipelines.release.privatize.privatize import (
    Prepared,
    cleaned_frame,
    finish_each,
    id_replacer,
    prepare,
)
from pipelines.release.privatize.row_ledger import ROW, ledger_of
from pipelines.release.privatize.text_cleaner import TEXTS_PER_GATHERING
from pipelines.release.store import part_cache
from pipelines.storage.fingerprint import fingerprint, json_part

# Candidate texts cleaned in one call: enough for the worker processes (text_cleaner.py).
CHUNK_TEXTS = 4 * TEXTS_PER_GATHERING
# Rows a chunk may hold (estimated in-memory size of its partitions' kept datasets): the prefilter
# passes few of a partition's texts, so a chunk of CHUNK_TEXTS candidates alone could hold most of
# the release's rows.
CHUNK_BYTES = 256 * 2**20


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
    partition. Partitions are prepared one by one and their candidate texts cleaned together, in
    chunks of about CHUNK_TEXTS texts: enough new texts for the redactor's worker processes (one
    partition alone rarely has enough), while memory holds one chunk of partitions (at most about
    CHUNK_BYTES of rows, or one partition)."""
    replacer = id_replacer(privacy.key, tuple(ids))
    chunk: list[tuple[Pending, Prepared]] = []
    held_bytes = 0
    for i, p in enumerate(pending):
        rows, names = _built_rows(root, p, held)
        prepared = prepare(rows, ids, privacy.redaction, names)
        del rows  # `prepared` holds them until its entry is saved
        held_bytes += sum(frame.estimated_size() for frame in prepared.datasets.values())
        chunk.append((p, prepared))
        texts = sum(len(prepared.candidates) for _, prepared in chunk)
        if texts < CHUNK_TEXTS and held_bytes < CHUNK_BYTES and i + 1 < len(pending):
            continue
        held_bytes = 0
        candidates = [c for _, prepared in chunk for c in prepared.candidates]
        chunk = [(q, replace(r, candidates=[])) for q, r in chunk]  # strings freed once cleaned
        cleaned = cleaned_frame(candidates, replacer, privacy.redaction, privacy.workers)
        del candidates
        chunk.reverse()
        while chunk:  # popped: a partition's rows are let go once its entry is saved
            done, prepared = chunk.pop()
            counts, datasets = _finish_and_save(root, done, prepared, privacy.key, cleaned, ids)
            del prepared
            yield done.key, counts, datasets


def _finish_and_save(
    root: Path | None,
    done: Pending,
    prepared: Prepared,
    key: bytes,
    cleaned: pl.DataFrame,
    ids: list[str],
) -> tuple[pl.DataFrame, dict[str, pl.DataFrame]]:
    """(replacements per row, privatized datasets) of a pending partition, its privatized entry
    saved. Each dataset is written once privatized and let go (its rows as built too): the
    datasets are kept and returned only when the store is off (`root` None)."""
    entry = part_cache.Writer(root, done.entries[1])
    counts, datasets = [pl.DataFrame(schema=LEDGER_SCHEMA)], {}
    for name, frame, rows in finish_each(prepared, key, cleaned):
        entry.write(name, frame)
        counts.append(rows.select(pl.lit(name).alias("dataset"), pl.all()))
        if root is None:
            datasets[name] = frame
        del frame  # before the next dataset is privatized
    ledger = pl.concat(counts, how="diagonal")
    ledger = ledger.with_columns(pl.all().exclude(LEDGER_SCHEMA.names()).fill_null(0))
    entry.write(ROW_LEDGER, ledger)
    entry.close({"ids": ids_entry(ids)})
    return ledger, datasets


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


def kept_ledger(counts: pl.DataFrame, keys: pl.DataFrame) -> dict[str, dict[str, int]]:
    """Each dataset's ledger over the rows the release keeps: `counts` (ROW_LEDGER rows of every
    partition, with PARTITION), `keys` (every partition's key frame with `keep`)."""
    kept = keys.filter(pl.col("keep")).select("dataset", ROW, PARTITION)
    rows = counts.join(kept, on=["dataset", ROW, PARTITION], how="semi")
    return {
        name: ledger_of(rows.filter(pl.col("dataset") == name).drop("dataset", PARTITION))
        for name in DATASETS
    }
