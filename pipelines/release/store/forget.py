"""Every existing release rewritten without a forgotten subject's rows (step 5 of a forget:
pipelines/privacy/forget.py): new file hashes and row counts, and a `deletion_log` entry in the
manifest naming the tombstone, never the subject."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import orjson
import polars as pl
import yaml

from pipelines.privacy.forget import mentions_text, purge
from pipelines.release.store.fetch import local_release
from pipelines.release.store.files import (
    CARD,
    MANIFEST,
    complete_releases,
    manifest_folders,
    read_manifest,
    split_counts,
)
from pipelines.release.store.minari_files import rewrite_minari
from pipelines.release.store.openai_files import (
    SECTION,
    dataset_files,
    jsonl_file,
    write_openai_files,
)
from pipelines.storage.files import write_parquet_atomic
from pipelines.storage.fingerprint import sha256_file
from pipelines.storage.objects import ObjectRoot, put_file
from pipelines.storage.uri import is_remote


def _rewrite_release(release: Path, needles: list[str], tombstone: dict) -> int | None:
    """Copy the release without matching rows and without the raw files named after the
    subject in its manifest (the provenance list), fix the manifest, swap it in; rows removed,
    None when nothing mentioned the subject."""
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
    raw_files = manifest.get("raw_files", [])
    named = [f for f in raw_files if mentions_text(f["file"], needles)]
    if not removed and not named:
        shutil.rmtree(staging)
        return None
    if named:
        manifest["raw_files"] = [f for f in raw_files if f not in named]
    if removed:  # their lines and episodes hold the rows' text: made again from the rows
        _rewrite_openai_files(staging, manifest)
        rewrite_minari(staging, manifest)
    sizes = {}
    for name, folder in manifest_folders(manifest).items():
        counts = sizes[name] = split_counts(staging, manifest["files"], folder)
        if name in manifest["counts"]:
            manifest["counts"][name] = counts
        else:
            manifest["profiles"][name]["counts"] = counts
    _card_sizes(staging, manifest, sizes)
    manifest.setdefault("deletion_log", []).append(
        {
            "tombstone_id": tombstone["tombstone_id"],
            "forgotten_at": tombstone["forgotten_at"],
            "rows_removed": removed,
            "raw_files_removed": len(named),
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


def _card_sizes(staging: Path, manifest: dict, sizes: dict[str, dict[str, int]]) -> None:
    """The card's split sizes as the rewritten files hold them, its manifest entry following:
    `datasets` checks each split's rows against the card's `num_examples` (a stale one fails
    `load_dataset(<release>, config)` with NonMatchingSplitsSizesError) and cannot load a
    split of 0 rows that the card's `configs` list (card/meta.py: `loadable_splits`)."""
    path = staging / CARD
    if not path.exists():
        return
    _, front, body = path.read_text(encoding="utf-8").split("---\n", 2)
    meta = yaml.safe_load(front)
    for config in meta.get("configs", []):
        rows = sizes.get(config["config_name"])
        if rows is not None:
            loadable = {s for s, n in rows.items() if n} or set(rows)
            config["data_files"] = [f for f in config["data_files"] if f["split"] in loadable]
    for info in meta.get("dataset_info", []):
        rows = sizes.get(info["config_name"])
        if rows is not None:
            loadable = {s for s, n in rows.items() if n} or set(rows)
            kept = [s for s in info["splits"] if s["name"] in loadable]
            info["splits"] = [s | {"num_examples": rows[s["name"]]} for s in kept]
    front = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True)
    path.write_text(f"---\n{front}---\n{body}", encoding="utf-8")
    for entry in manifest["files"]:
        if entry["path"] == CARD:
            entry |= {"sha256": sha256_file(path), "bytes": path.stat().st_size}


def _rewrite_openai_files(staging: Path, manifest: dict) -> None:
    """The OpenAI files made again from the rewritten Parquet files (their lines hold the rows'
    text), with their manifest entries and section."""
    section = manifest.get(SECTION)
    if not section:  # a release made before releases had them
        return
    datasets = {entry["dataset"]: list(entry["counts"]) for entry in section.values()}
    parquet = {name: dataset_files(manifest["files"], name) for name in datasets}
    manifest[SECTION] = write_openai_files(staging, parquet, datasets)
    rows = {
        jsonl_file(config, split): n
        for config, entry in manifest[SECTION].items()
        for split, n in entry["counts"].items()
    }
    for entry in manifest["files"]:
        if entry["path"] in rows:
            path = staging / entry["path"]
            entry |= {"rows": rows[entry["path"]], "sha256": sha256_file(path)}
            entry["bytes"] = path.stat().st_size


def _rewrite_stored_release(release: Path, needles: list[str], tombstone: dict) -> int | None:
    """A release on object storage, rewritten on a local download and uploaded back: the files
    whose bytes changed, then its manifest (objects are replaced whole; there is no folder to
    swap). A file the subject was not in is not sent again."""
    root, version = ObjectRoot.parse(str(release.parent)), release.name
    with local_release(release) as folder:
        before = _file_digests(folder)
        removed = _rewrite_release(folder, needles, tombstone)
        if removed is not None:
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
    """Every complete release without the subject's rows and raw file names; rows removed per
    rewritten version."""
    out = {}
    for version in complete_releases(exports):
        removed = _rewrite_release(exports / version, needles, tombstone)
        if removed is not None:
            out[version] = removed
    return out
