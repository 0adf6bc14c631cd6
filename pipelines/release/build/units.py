"""The units a release partition is built, privatized and stored as: the partition whole, or, when
its episodes make more than one chunk (chunking.py), each chunk and the partition's
rated-alternative pairs (the one kind of row that pairs episodes of a group, built from every
chunk's rated rows). A unit's built entry is what parts.py privatizes, as it did whole
partitions; an index entry per partition (keyed by its input digest) names its units, so an
unchanged partition is not read at all.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from pipelines.exports.datasets import DATASETS, rated_alternatives
from pipelines.partitions.rows import GOLD_KEYS, SILVER_KEYS
from pipelines.release.build import chunking
from pipelines.release.build.frames import (
    KEYS,
    PARTICIPANTS,
    TEXTS,
    distinct_texts,
    key_frame,
)
from pipelines.release.privatize.known_names import KNOWN_NAMES
from pipelines.release.store import part_cache
from pipelines.splits.near_dups import NEAR_DUPS_TABLE
from pipelines.storage.fingerprint import fingerprint

# (silver, gold, rated_out) → (meta, frames): datasets.build_partition
Build = Callable[
    [dict[str, pl.DataFrame], dict[str, pl.DataFrame], list[pl.DataFrame] | None],
    tuple[dict, dict[str, pl.DataFrame]],
]
RATED = "_rated"  # a chunk's rated rows, with group and source: what its partition's pairs need
PAIRS = "pairs"
# silver's near-duplicate clusters are per episode: each chunk gets its own episodes' (whole,
# every chunk's key would change with any episode the partition gains)
_KEYS = SILVER_KEYS | GOLD_KEYS | {NEAR_DUPS_TABLE: "episode_id"}
_WHOLE = ("contexts", "splits")  # read for a partition, given whole to its chunks


@dataclass(frozen=True)
class Unit:
    key: str  # `b00003-s01` (the partition whole), `…~c00002` or `…~pairs`
    entry: str  # its built entry
    meta: dict
    frames: dict[str, pl.DataFrame] | None  # when the store is off


def index_key(partition: str, build: str) -> str:
    return chunking.index_prefix(partition) + build[:40]


def indexed(root: Path | None, index: str) -> list[tuple[str, str]] | None:
    """(unit, entry) of a partition's index entry, when it and all its units' entries are
    stored."""
    meta, _ = part_cache.load(root, index, names=())
    if not meta or not all(part_cache.has(root, entry) for _, entry in meta["units"]):
        return None
    return [(unit, entry) for unit, entry in meta["units"]]


def _episode_rows(silver: dict[str, pl.DataFrame]) -> pl.DataFrame:
    counts = [
        frame.group_by("episode_id").len("n")
        for name, frame in silver.items()
        if SILVER_KEYS.get(name) == "episode_id"
    ]
    return pl.concat(counts).group_by("episode_id").agg(pl.col("n").sum())


def _chunk_key(tables: dict[str, pl.DataFrame], code: str) -> str:
    groups = tables["episodes"].select("group_id").unique()
    rows = {n: f for n, f in tables.items() if n not in _WHOLE}
    rows["splits"] = tables["splits"].join(groups, on="group_id", how="semi")
    return fingerprint(["chunk", chunking.digest(rows), code])


def build_units(
    root: Path | None,
    partition: str,
    whole: str,
    silver: dict[str, pl.DataFrame],
    gold: dict[str, pl.DataFrame],
    code: str,
    build: Build,
) -> list[Unit]:
    """A partition's units, each built now unless stored, and its index entry (`whole`: the
    entry key of the partition built whole, also the index's; `code`: the config and code part
    of a chunk's key; `build(silver, gold, rated_out)` → (meta, frames)). A partition cut into
    chunks takes its tables: `silver` and `gold` are emptied once cut (`_chunked`)."""
    of = chunking.atoms(silver["episodes"])
    rows = _episode_rows(silver)
    small = rows.get_column("n").sum() <= chunking.CHUNK_ROWS
    if small or chunking.crosses(silver, gold, of):
        chunk_of = chunking.one_chunk(of)
    else:
        previous = chunking.previous_map(root, partition)
        chunk_of = chunking.assign(of, silver["episodes"], rows, previous)
    if chunk_of.get_column(chunking.CHUNK).n_unique() <= 1:
        units = [_built(root, partition, whole, silver, gold, build, None)]
    else:
        units = _chunked(root, partition, silver, gold, code, build, of, chunk_of)
    meta = {"units": [[u.key, u.entry] for u in units]}
    part_cache.save(root, index_key(partition, whole), meta, {chunking.ATOMS: chunk_of})
    return units


def _built(root, unit, entry, silver, gold, build, rated_out) -> Unit:
    meta, _ = part_cache.load(root, entry, names=())
    if meta:
        return Unit(unit, entry, meta, None)
    meta, frames = build(silver, gold, rated_out)
    if rated_out is not None:
        frames = frames | {RATED: rated_out[0]}
    part_cache.save(root, entry, meta, frames)
    return Unit(unit, entry, meta | {"fresh": True}, frames if root is None else None)


def _chunked(root, partition, silver, gold, code, build, of, chunk_of) -> list[Unit]:
    """The chunks' units and the pairs' unit; empties `silver` and `gold` once they are cut into
    chunks, so that the partition's rows are not held twice while its chunks are built (at 1 GB
    of raw logs a giant partition's tables are ~200 MB)."""
    episode_chunk = chunking.episode_chunks(of, chunk_of)
    tables = {"silver": silver, "gold": gold}
    cut = {layer: chunking.split(t, episode_chunk, _KEYS) for layer, t in tables.items()}
    splits = gold["splits"]
    silver.clear()
    gold.clear()
    units = []
    for chunk in sorted(cut["silver"]):
        mine_silver, mine_gold = cut["silver"].pop(chunk), cut["gold"].pop(chunk)
        entry = _chunk_key(mine_silver | mine_gold, code)
        key = f"{partition}~c{chunk:05d}"
        units.append(_built(root, key, entry, mine_silver, mine_gold, build, []))
    units.append(_pairs(root, partition, units, splits))
    return units


def _frames(root: Path | None, unit: Unit, names: list[str]) -> dict[str, pl.DataFrame]:
    if unit.frames is not None:
        return {name: unit.frames[name] for name in names}
    return part_cache.load(root, unit.entry, names)[1]


def _pairs(root: Path | None, partition: str, chunks: list[Unit], splits: pl.DataFrame) -> Unit:
    """The unit of a chunked partition's rated-alternative pairs: the `preference` rows of
    `rated_alternatives` over every chunk's rated rows; the other datasets without rows."""
    entry = fingerprint([PAIRS, *(u.entry for u in chunks)])
    key = f"{partition}~{PAIRS}"
    meta, _ = part_cache.load(root, entry, names=())
    if meta:
        return Unit(key, entry, meta, None)
    like = {
        name: frame.head(0)
        for name, frame in _frames(root, chunks[0], [*DATASETS, PARTICIPANTS]).items()
    }
    rated = pl.concat([_frames(root, u, [RATED])[RATED] for u in chunks], how="vertical_relaxed")
    pairs, unshaped = rated_alternatives(rated, splits, like["preference"])
    datasets = {name: pairs if name == "preference" else like[name] for name in DATASETS}
    frames = datasets | {
        KEYS: key_frame(datasets),
        PARTICIPANTS: like[PARTICIPANTS],
        TEXTS: distinct_texts(datasets),
        # the pairs' episodes are the chunks' episodes: their names
        KNOWN_NAMES: pl.concat([_frames(root, u, [KNOWN_NAMES])[KNOWN_NAMES] for u in chunks])
        .unique()
        .sort("episode_id", "name"),
    }
    meta = {"left_out": {"preference": {"no_user_turn": unshaped}}}
    part_cache.save(root, entry, meta, frames)
    return Unit(key, entry, meta | {"fresh": True}, frames if root is None else None)
