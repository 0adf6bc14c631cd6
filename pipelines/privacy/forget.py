"""Forgetting a subject: a tombstone, and no trace left in anything turnlake derived.

`forget` (1) adds the subject to the raw root's consent registry with `"forget": true`, so every
later build withholds it from silver and the ingest purges it from bronze; (2) appends a
tombstone (id, kind, keyed hash of the subject id — never the id — and date) to `<data
root>/privacy/tombstones.jsonl`; (3) purges bronze parts and parse-quarantine excerpts of every
row that mentions the subject; then the caller rebuilds silver, gold and views; (4)
`erase_from_tables` deletes any row still mentioning the subject from every Delta table and
vacuums with no retention, so no version of any table holds it (time travel to earlier
versions, as-of releases before the forget included, then fails cleanly); and (5) every
existing release is rewritten without the subject's rows (new file hashes, manifest deletion
log: pipelines/release/store/forget.py). Everything else that can hold the subject (caches, files
older versions left, build reports) is handled as storage/subject_data.py says, by the caller
(pipelines/api/privacy.py). Raw files are the producing systems' data: files named after
the subject are skipped by ingest; their erasure is reported.

Partition runs (Dagster's `silver_partition`, `gold_partition`) hold no data-root lock: they run
side by side, in other processes or pods, and a lock on an `s3://` data root is an exclusive
lease, so taking it would run them one at a time. Yet a vacuum with no retention deletes every
file no committed version names, the files a run has written but not committed yet included,
and a run that read the subject's rows before the forget would commit them after it. So the two
keep out of each other's way through the data root itself, the same on a folder and on S3:

- a run marks its partition *pending* in its layer's record before writing any row file, and
  records it only after (silver: partitions/store.py; gold: gold/partitions.py);
- `forget` writes `Layout.forgetting` first, then refuses (`PartitionRunsInFlight`, exit 3,
  nothing else done) while any partition is pending in silver's or gold's newest record, and
  checks again after its rebuild, before it erases; the marker is removed when it ends;
- a run looks for the marker before its first commit (its pending mark) and again after it,
  and leaves the partition to the build when it is there.

Both sides write first and read after: a run whose mark came before the forget's check is seen
by it; otherwise its second look came after the forget's marker and finds it, however long the
run stalled in between (it then leaves its mark, and the forget's rebuild redoes the partition
or its check after the rebuild refuses). A pending mark does not say whether its run is alive:
a run that was killed leaves one until a build (which redoes the partition) or a run of that key
clears it.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import orjson
import polars as pl

from pipelines.privacy.optouts import OPTOUTS_FILE, append_to_registry
from pipelines.sources.listing import root_of
from pipelines.storage import tables as stored
from pipelines.storage.files import append_bytes, write_bytes_atomic
from pipelines.storage.layout import Layout
from pipelines.storage.uri import as_root


def forgotten_ids(raw_root: Path) -> list[str]:
    """Ids of subjects whose registry entry says `"forget": true` (unreadable lines are skipped
    here; `load_optouts` reports them)."""
    path = root_of(raw_root) / OPTOUTS_FILE
    if not path.exists():
        return []
    ids = set()
    for line in path.read_bytes().splitlines():
        try:
            entry = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if (
            isinstance(entry, dict)
            and entry.get("forget") is True
            and str(entry.get("subject_id") or "").strip()
        ):
            ids.add(str(entry["subject_id"]).strip())
    return sorted(ids)


def mention_pattern(needles: Iterable[str]) -> str | None:
    """Regex for any needle as a whole token: `c-1` matches in `dialogue:x/c-1` and `c-1_run`,
    not in `c-12` or `c-1-b` (ids are letters, digits and dashes; `_`, `/`, `:`, quotes delimit
    them)."""
    alternatives = sorted({re.escape(n) for n in needles if n}, key=len, reverse=True)
    if not alternatives:
        return None
    return rf"(?:^|[^0-9A-Za-z-])(?:{'|'.join(alternatives)})(?:[^0-9A-Za-z-]|$)"


def mentions(frame: pl.DataFrame, needles: Iterable[str]) -> pl.Series:
    """Per row: does any value, however nested, mention one of `needles` as a token?"""
    pattern = mention_pattern(needles)
    if pattern is None or frame.height == 0:
        return pl.Series([False] * frame.height, dtype=pl.Boolean)
    return frame.select(pl.struct(pl.all()).struct.json_encode().str.contains(pattern)).to_series()


def mentions_text(text: str, needles: Iterable[str]) -> bool:
    pattern = mention_pattern(needles)
    return pattern is not None and re.search(pattern, text) is not None


def purge(frame: pl.DataFrame, needles: Iterable[str]) -> tuple[pl.DataFrame, int]:
    keep = ~mentions(frame, needles)
    kept = frame.filter(keep)
    return kept, frame.height - kept.height


def erase_from_tables(layout: Layout, needles: list[str]) -> dict[str, int]:
    """Overwrite every silver, gold and splits table without rows mentioning `needles` (a new
    snapshot per layer that had any), then vacuum every file no current version reads and drop
    the older snapshots. Rows removed per `layer.table` (usually none: the rebuild withheld the
    subject already). Overwrites, not predicate deletes: a predicate would be logged with the id."""
    removed: dict[str, int] = {}
    for layer in stored.LAYERS:
        current = stored.snapshot(layout, layer)
        if current is None:
            continue
        kept, whole = {}, {}
        for table in current.versions:
            split_up = stored.partitioned(layout, layer, table)
            frame = stored.read(layout, layer, table, with_partition=split_up)
            frame, n = purge(frame, needles)  # the partition key holds no subject id
            if n:
                kept[table], removed[f"{layer}.{table}"] = frame, n
                if split_up:
                    whole[table] = stored.WHOLE
        if kept:
            stored.publish(layout, layer, kept, current.meta, partitions=whole)
    stored.vacuum(layout, retention_hours=0)
    stored.forget_history(layout)
    return removed


def record_forget(raw_root: Path, data_root: Path, kind: str, subject_id: str, key: bytes) -> dict:
    """Registry entry + tombstone; returns the tombstone (which holds no subject id)."""
    now = datetime.now(UTC).isoformat()
    entry = {"subject_kind": kind, "subject_id": subject_id, "opted_out_at": now, "forget": True}
    append_to_registry(raw_root, orjson.dumps(entry) + b"\n")
    tombstone = {
        "tombstone_id": uuid.uuid4().hex,
        "subject_kind": kind,
        "subject_ref": hmac.new(key, f"{kind}\0{subject_id}".encode(), hashlib.sha256).hexdigest()[
            :24
        ],
        "forgotten_at": now,
    }
    append_bytes(Layout(as_root(data_root)).tombstones, orjson.dumps(tombstone) + b"\n")
    return tombstone


def forget_in_progress(layout: Layout) -> bool:
    """Whether a forget is erasing in this data root (the module docstring)."""
    return layout.forgetting.exists()


@contextmanager
def forgetting(layout: Layout) -> Iterator[None]:
    """Mark the data root as being erased in while the block runs (the module docstring)."""
    marker = layout.forgetting
    write_bytes_atomic(marker, datetime.now(UTC).isoformat().encode())
    try:
        yield
    finally:
        marker.unlink(missing_ok=True)
