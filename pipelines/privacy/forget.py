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
log). Raw files are the producing systems' data: files named after the subject are skipped by
ingest; their erasure is reported.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import shutil
import uuid
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

import orjson
import polars as pl

from pipelines.privacy.optouts import OPTOUTS_FILE, append_to_registry
from pipelines.release.fetch import local_release
from pipelines.release.files import (
    MANIFEST,
    complete_releases,
    manifest_folders,
    read_manifest,
    split_counts,
)
from pipelines.sources.listing import root_of
from pipelines.storage import tables as stored
from pipelines.storage.files import append_bytes, write_parquet_atomic
from pipelines.storage.fingerprint import sha256_file
from pipelines.storage.layout import Layout
from pipelines.storage.objects import ObjectRoot, put_file
from pipelines.storage.uri import as_root, is_remote
from pipelines.transforms.unit_cache import clear as clear_silver_cache


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
    clear_silver_cache(layout)  # rows before opt-outs were withheld: rebuilt by the next build
    return removed


def purge_reports(reports: Path, needles: list[str]) -> list[str]:
    """Delete every HTML build report that mentions `needles` (a quarantine example shows raw
    text), names returned; reports are views of a past build, so none is rewritten."""
    if not reports.exists():
        return []
    purged = []
    for path in sorted(p for p in reports.rglob("*") if p.is_file()):
        if mentions_text(path.read_text(errors="replace"), needles):
            path.unlink()
            purged.append(path.name)
    return purged


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


def _rewrite_release(release: Path, needles: list[str], tombstone: dict) -> int:
    """Copy the release without matching rows, fix its manifest, swap it in; rows removed."""
    if is_remote(release):
        return _rewrite_stored_release(release, needles, tombstone)
    manifest = read_manifest(release)
    staging = release.with_name(f".tmp-forget-{release.name}")
    shutil.rmtree(staging, ignore_errors=True)
    shutil.copytree(release, staging)
    removed = 0
    for entry in manifest["files"]:
        if not entry["path"].endswith(".parquet"):
            continue
        kept, n = purge(pl.read_parquet(staging / entry["path"]), needles)
        if n:
            write_parquet_atomic(kept, staging / entry["path"])
            removed += n
        entry["rows"] = pl.scan_parquet(staging / entry["path"]).select(pl.len()).collect().item()
        entry["sha256"], entry["bytes"] = (
            sha256_file(staging / entry["path"]),
            (staging / entry["path"]).stat().st_size,
        )
    if not removed:
        shutil.rmtree(staging)
        return 0
    for name, folder in manifest_folders(manifest).items():
        counts = split_counts(staging, manifest["files"], folder)
        if name in manifest["counts"]:
            manifest["counts"][name] = counts
        else:
            manifest["profiles"][name]["counts"] = counts
    manifest.setdefault("deletion_log", []).append(
        {
            "tombstone_id": tombstone["tombstone_id"],
            "forgotten_at": tombstone["forgotten_at"],
            "rows_removed": removed,
        }
    )
    (staging / MANIFEST).write_bytes(
        orjson.dumps(manifest, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS)
    )
    old = release.with_name(f".old-{release.name}")
    os.rename(release, old)
    os.rename(staging, release)
    shutil.rmtree(old)
    return removed


def _rewrite_stored_release(release: Path, needles: list[str], tombstone: dict) -> int:
    """A release on object storage, rewritten on a local download and uploaded back: the files
    whose bytes changed, then its manifest (objects are replaced whole; there is no folder to
    swap). A file the subject was not in is not sent again."""
    root, version = ObjectRoot.parse(str(release.parent)), release.name
    with local_release(release) as folder:
        before = _file_digests(folder)
        removed = _rewrite_release(folder, needles, tombstone)
        if removed:
            after = _file_digests(folder)
            changed = sorted(
                rel for rel in after if rel != MANIFEST and after[rel] != before.get(rel)
            )
            for rel in [*changed, MANIFEST]:
                put_file(root, f"{version}/{rel}", folder / rel)
    return removed


def _file_digests(folder: Path) -> dict[str, str]:
    return {
        path.relative_to(folder).as_posix(): sha256_file(path)
        for path in folder.rglob("*")
        if path.is_file()
    }


def rewrite_releases(exports: Path, needles: list[str], tombstone: dict) -> dict[str, int]:
    """Every complete release without the subject's rows; rows removed per rewritten version."""
    out = {}
    for version in complete_releases(exports):
        removed = _rewrite_release(exports / version, needles, tombstone)
        if removed:
            out[version] = removed
    return out
