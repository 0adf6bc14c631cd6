"""Retention of table history: how long old silver / gold / splits versions stay readable.

Every build that changes a layer adds Delta versions and a snapshot record. The garbage step keeps
the records published within `[retention] keep_days`, the one in force at the cutoff (so every
as-of time inside the window still reads), the current one, and every record whose versions a kept
release's manifest names (`table_versions`), so rebuilding that release as of its time keeps its
content hash; then it vacuums every Delta file no kept version and no younger version needs. A run
of pruned records is left as one record without tables: an as-of time inside it is refused, never
answered from an older snapshot.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from pipelines.storage import delta_cache
from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout
from pipelines.storage.uri import storage_options

PRUNED = "pruned"  # meta of a record standing for snapshots removed by retention


@dataclass(frozen=True)
class Retained:
    records_removed: int  # snapshot records pruned (each run of them left as one `PRUNED` record)
    files_removed: list[str]  # what Delta's vacuum lists (also files an earlier pass removed)


def _gap(layer: str, published_at: str) -> stored.Snapshot:
    return stored.Snapshot(layer, {}, {PRUNED: "true"}, published_at)


def retained(
    entries: Sequence[stored.Snapshot], cutoff: datetime, pinned: Iterable[Mapping[str, int]] = ()
) -> list[stored.Snapshot]:
    """The snapshot records retention keeps, oldest first: those published at or after `cutoff`,
    the one in force at it, the current one, and every one whose versions a kept release names.
    Each run of removed records becomes one record without tables, so an as-of time inside it
    finds no tables instead of silently reading an older snapshot."""
    pins = [dict(p) for p in pinned]
    older = [stored.parse_time(s.published_at) < cutoff for s in entries]
    in_force = max((i for i, old in enumerate(older) if old), default=None)
    out: list[stored.Snapshot] = []
    for i, entry in enumerate(entries):
        keep = not older[i] or i in (in_force, len(entries) - 1) or entry.versions in pins
        if keep and entry.versions:
            out.append(entry)
        elif not out or out[-1].versions:  # a gap opens here (an old gap record merges in)
            out.append(_gap(entry.layer, entry.published_at))
    return out


def apply_retention(
    layout: Layout,
    keep_days: int,
    pinned: Mapping[str, Iterable[Mapping[str, int]]],
    now: datetime | None = None,
) -> Retained:
    """Prune each layer's snapshot records to those `retained` keeps (cutoff: `now` minus
    `keep_days`), then vacuum every table's files that neither a kept record's version nor a
    version younger than the cutoff needs. `pinned`: layer → the versions kept releases name."""
    cutoff = (now or datetime.now(UTC)) - timedelta(days=keep_days)
    hours = max(0, math.ceil((datetime.now(UTC) - cutoff).total_seconds() / 3600))
    records, removed = 0, []
    for layer in stored.LAYERS:
        entries = stored.history(layout, layer)
        if not entries:
            continue
        kept = retained(entries, cutoff, pinned.get(layer, ()))
        records += sum(1 for s in entries if s.versions) - sum(1 for s in kept if s.versions)
        if kept != entries:
            stored.replace_history(layout, layer, kept)
        for table in kept[-1].versions:
            removed += delta_cache.vacuum(
                stored.table_uri(layout, layer, table),
                storage_options(layout.data_root),
                retention_hours=hours,
                dry_run=False,
                enforce_retention_duration=False,
                full=True,
                keep_versions=sorted({s.versions[table] for s in kept if table in s.versions}),
            )
    return Retained(records, removed)
