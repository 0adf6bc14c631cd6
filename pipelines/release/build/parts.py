"""A release's datasets built, deduplicated and privatized one partition at a time, each step's
result kept in a content-addressed store (store/part_cache.py), so a release after a small change
rebuilds and re-privatizes only the partitions whose rows changed.

Per partition: its datasets as built (entry key: its silver and gold rows, the config, the code),
then every one of their rows privatized, with its replacements (entry key: the built entry, the
pseudonym key's fingerprint, the redaction config's fingerprint and the code; made by
privatize/partitions.py). Which rows are dropped (duplicate prompts across splits, exact
duplicates, decontamination), the split proof and the subject ids are global and exact, computed
from every partition's key frame and participants (small frames, not the rows). The dropped rows
are not in the privatized entry's key: new data elsewhere often drops an old partition's row (a
new exact duplicate of smaller episode id wins), and privatizing a row does not depend on which
rows are dropped, so the release drops them from the privatized rows as it reads them and sums
the ledger over the kept rows (privatize/row_ledger.py). Privatization depends on the
global subject ids only through the ids a text contains: a privatized entry made with other
ids is reused when no id that came or went occurs in its partition's texts (else it is made again).
A partition of many rows is all this in chunks of episodes, each chunk a unit of its own (units.py):
a touched giant partition builds and privatizes only its changed chunks.

Two calls, so that the key frame is let go before the split proof and privatizing: `keyed_units`
builds the units and applies the global rules to their key frames, the caller cuts the proof's
frames and each row's keep flag from them and makes the split proof, and
`release_parts` privatizes the units with each row's keep flag alone, summing each unit's ledger
over its kept rows as it goes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import cache, partial
from pathlib import Path

import polars as pl

from pipelines.exports.datasets import DATASETS
from pipelines.exports.datasets.common import DatasetOptions
from pipelines.partitions.assign import PARTITION
from pipelines.privacy.pseudonyms import IdReplacer
from pipelines.release.build import datasets
from pipelines.release.build.datasets import KEYS, PARTICIPANTS, TEXTS, Partition
from pipelines.release.build.staged import BATCH, Source, slice_of_partition
from pipelines.release.privatize.decontaminated import EvalSets, drop_matched, matched_units
from pipelines.release.privatize.partitions import (
    ROW_LEDGER,
    Pending,
    Privacy,
    ids_entry,
    kept_counts,
    kept_ledger,
    privatize_all,
)
from pipelines.release.privatize.privatize import id_replacer, participant_subject_ids
from pipelines.release.privatize.row_ledger import ROW
from pipelines.release.store import part_cache
from pipelines.storage.engine import engine_digest
from pipelines.storage.fingerprint import fingerprint, json_part, sha256_file
from pipelines.storage.layout import Layout

log = logging.getLogger("turnlake")


@dataclass(frozen=True)
class Parts:
    sources: dict[str, list[Source]]  # each dataset's privatized partitions, in partition order
    ledger: dict[str, dict[str, int]]
    ids: list[str]
    entries: list[str]  # the store entries this release used (the others are pruned)

    def replace_ids(self, key: bytes) -> IdReplacer:
        return id_replacer(key, tuple(self.ids))


def changed_ids(root: Path | None, ids: list[str], made_with: str) -> list[str] | None:
    """The ids that came or went between the ids entry `made_with` and `ids`, sorted (None when
    that entry is gone)."""
    _, old = part_cache.load(root, made_with, ["ids"])
    if "ids" not in old:
        return None
    return sorted(set(old["ids"].get_column("id").to_list()).symmetric_difference(ids))


def ids_difference(root: Path | None, ids: list[str]) -> Callable[[str], list[str] | None]:
    """`changed_ids` against `ids`, taken once per earlier ids entry: most stored entries were
    made with the same earlier ids."""
    return cache(partial(changed_ids, root, ids))


def _still_private(root: Path | None, changed: list[str] | None, build: str) -> bool:
    """Whether an entry privatized under other ids is what the release's ids would make: no id
    that came or went (`changed`, None when unknown) occurs in any text of the partition (the
    privatizer's own gate, read from the built entry's distinct texts, not from its datasets)."""
    if changed is None:
        return False
    if not changed:
        return True
    _, frames = part_cache.load(root, build, [TEXTS])
    return TEXTS in frames and not frames[TEXTS].get_column("text").str.contains_any(changed).any()


def _reused(
    root: Path | None,
    entries: tuple[str, str],
    ids_key: str,
    changed_since: Callable[[str], list[str] | None],
) -> tuple[dict, str]:
    """(meta, reused | rechecked) of a partition's stored privatized entry still right for the
    ids of `ids_key`; ({}, how), the entry discarded, when it must be privatized. `entries`:
    built, private keys; `changed_since(made_with)`: the ids that came or went since."""
    build, private = entries
    meta, _ = part_cache.load(root, private, names=())
    how = "reused"
    if meta and meta["ids"] != ids_key:
        how = "rechecked"
        if _still_private(root, changed_since(meta["ids"]), build):
            part_cache.update_meta(root, private, {"ids": ids_key})
        else:  # a save never replaces a stored entry
            part_cache.discard(root, private)
            meta = {}
    return meta, how


def _private_key(build: str, privacy: Privacy) -> str:
    """What a partition's privatized rows are a function of: not which of them are dropped."""
    parts = [build, privacy.key_fingerprint, privacy.redaction_id]
    return fingerprint([*parts, engine_digest()])


def _global_keys(
    root: Path | None, built: dict[str, str], held: dict[str, dict[str, pl.DataFrame]]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(every partition's key frame with `keep` and PARTITION, all human participants)."""
    keys, people = [], []
    for partition, entry in built.items():
        frames = held.get(partition) or part_cache.load(root, entry, [KEYS, PARTICIPANTS])[1]
        keys.append(frames[KEYS].with_columns(**{PARTITION: pl.lit(partition)}))
        people.append(frames[PARTICIPANTS])
    participants = pl.concat(people).unique().sort("participant_id", "episode_id", "kind")
    # the row hashes (a third of the frame) serve the duplicate rule alone, applied here
    return datasets.kept_rows(pl.concat(keys)).drop("row_hash"), participants


def _with_batch(frame: pl.DataFrame, batch: int) -> pl.DataFrame:
    return frame.with_columns(**{BATCH: pl.lit(batch, pl.Int64)})


def _source(
    root: Path | None, entry: str, name: str, p: Partition, held: dict, keep: pl.Series
) -> Source:
    """A partition's kept rows of one dataset: its privatized rows (every row as built) where
    `keep` (one flag per row, in row order) holds."""
    frame, batch, cut = held.get(name), p.batch, slice_of_partition(p.home or p.key)
    if frame is not None:
        schema = frame.head(0).with_columns(**{BATCH: pl.lit(batch, pl.Int64)}).schema
        return Source(batch, schema, lambda: _with_batch(frame.filter(keep), batch), cut)
    path = part_cache.frame_path(root, entry, name)
    schema = pl.Schema({**pl.scan_parquet(path).collect_schema(), BATCH: pl.Int64})
    dropped = json_part((~keep).arg_true().to_list())
    kept_rows = fingerprint([p.key, sha256_file(path), dropped])
    load = lambda: _with_batch(pl.read_parquet(path).filter(keep), batch)
    return Source(batch, schema, load, cut, kept_rows, partial(_read, path, keep, batch))


def _read(path: Path, keep: pl.Series, batch: int, names: list[str]) -> pl.DataFrame:
    """Some columns of a stored partition's kept rows (BATCH among them when named), the others
    not decoded: the release order's first pass reads only what its key needs."""
    stored = [name for name in names if name != BATCH]
    return _with_batch(pl.read_parquet(path, columns=stored).filter(keep), batch).select(names)


def _sources(
    root: Path | None,
    partitions: list[Partition],
    private: dict[str, str],
    held: dict[str, dict[str, pl.DataFrame]],
    keep: dict[str, dict[str, pl.Series]],
) -> dict[str, list[Source]]:
    """Each dataset's privatized partitions, read only when their batch is finished
    (staged.py)."""
    none = pl.Series("keep", [], pl.Boolean)
    return {
        name: [
            _source(
                root,
                private[p.key],
                name,
                p,
                held.get(p.key) or {},
                keep.get(p.key, {}).get(name, none),
            )
            for p in partitions
        ]
        for name in DATASETS
    }


def keep_flags(keys: pl.DataFrame) -> dict[str, dict[str, pl.Series]]:
    """unit → dataset → each row's `keep`, in row order (`keys`: with PARTITION and `keep`)."""
    flags: dict[str, dict[str, pl.Series]] = {}
    cut = keys.select(PARTITION, "dataset", ROW, "keep")  # not the frame's other strings
    for (unit, name), frame in cut.partition_by(PARTITION, "dataset", as_dict=True).items():
        flags.setdefault(unit, {})[name] = frame.sort(ROW).get_column("keep")
    return flags


@dataclass(frozen=True)
class Keyed:
    """Every unit built, and the global rules' key frame over them: what the split proof reads
    and what privatizing the units needs."""

    units: list[Partition]  # every partition's units, in partition order
    built: dict[str, str]  # unit → its built entry
    metas: dict[str, dict]
    held: dict[str, dict[str, pl.DataFrame]]  # frames of units built now the store cannot keep
    indexes: list[str]
    keys: pl.DataFrame  # every unit's key frame with `keep`, `duplicate_row` and PARTITION
    participants: pl.DataFrame  # human_participants of all of silver
    decontaminated: dict[str, dict[str, int]]  # rows that left train/validation, per eval set
    matched: list[str]  # the units' decontamination entries
    started: float  # time.monotonic() when building began
    keep: dict[str, dict[str, pl.Series]] = field(default_factory=dict)  # `privatizing`

    def privatizing(self) -> Keyed:
        """This with each row's keep flag (`keep_flags`) instead of the key frame, all that
        privatizing reads: the frame (~300 MB at 1 GB of raw data) is let go before the split
        proof runs on its own frames."""
        return replace(self, keys=self.keys.clear(), keep=keep_flags(self.keys))


def keyed_units(
    layout: Layout,
    as_of: datetime | None,
    config: dict,
    options: DatasetOptions,
    evals: EvalSets | None = None,
) -> Keyed:
    """Every partition's units built (or found in the store), deduplicated and decontaminated
    against `evals` (see the module doc)."""
    root = part_cache.cache_root(layout)
    started = time.monotonic()
    partitions, built, metas, held, indexes = datasets.built(
        layout, root, datasets.partitions_in_force(layout, as_of), config, as_of, options
    )
    fresh = sum(1 for meta in metas.values() if meta.get("fresh"))
    log.info("release: %d of %d partition units built now", fresh, len(partitions))
    keys, participants = _global_keys(root, built, held)
    decontaminated: dict[str, dict[str, int]] = {}
    matched: list[str] = []
    if evals is not None:
        hits, matched = matched_units(root, built, held, evals)
        keys, decontaminated = drop_matched(keys, hits, evals)
    return Keyed(
        partitions,
        built,
        metas,
        held,
        indexes,
        keys,
        participants,
        decontaminated,
        matched,
        started,
    )


def release_parts(layout: Layout, keyed: Keyed, privacy: Privacy) -> Parts:
    """Every unit of `keyed` privatized (see the module doc), its kept rows the release's."""
    root = part_cache.cache_root(layout)
    partitions, built, held, keep = keyed.units, keyed.built, keyed.held, keyed.keep
    ids = participant_subject_ids(keyed.participants)
    ids_key = ids_entry(ids)
    part_cache.save(root, ids_key, {}, {"ids": pl.DataFrame({"id": ids}, schema={"id": pl.String})})
    private, held_private, hows, pending = {}, {}, [], []
    changed_since = ids_difference(root, ids)
    counts = []  # each unit's replacements summed over its kept rows
    for p in partitions:
        private[p.key] = _private_key(built[p.key], privacy)
        entries = (built[p.key], private[p.key])
        meta, how = _reused(root, entries, ids_key, changed_since)
        if meta:
            rows = part_cache.load(root, private[p.key], [ROW_LEDGER])[1][ROW_LEDGER]
            counts.append(kept_counts(rows, keep.get(p.key, {})))
            hows.append(how)
        else:
            pending.append(Pending(p.key, entries))
    for key, rows, frames in privatize_all(root, pending, ids, privacy, held):
        counts.append(kept_counts(rows, keep.get(key, {})))
        hows.append("privatized")
        if root is None:
            held_private[key] = frames
    log.info(
        "release: %d partition units privatized now, %d rechecked for new ids; %.1f s",
        sum(1 for how in hows if how == "privatized"),
        sum(1 for how in hows if how == "rechecked"),
        time.monotonic() - keyed.started,
    )
    return Parts(
        _sources(root, partitions, private, held_private, keep),
        kept_ledger(counts),
        ids,
        [*built.values(), *private.values(), ids_key, *keyed.indexes, *keyed.matched],
    )
