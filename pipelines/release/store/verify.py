"""Re-check a release against its manifest: every byte, every row count, the split proof."""

from __future__ import annotations

from pathlib import Path

import orjson
import polars as pl
import pyarrow.parquet as pq

from pipelines.release.store.fetch import local_release
from pipelines.release.store.files import (
    MANIFEST,
    SPLIT_PROOF,
    manifest_folders,
    read_manifest,
    split_counts,
)
from pipelines.release.store.minari_files import minari_count_problems
from pipelines.release.store.openai_files import SECTION, SUFFIX, jsonl_counts, line_count
from pipelines.splits.assign import proof_problems
from pipelines.storage.fingerprint import sha256_file
from pipelines.storage.uri import is_remote


def _split_overlaps(release: Path, dataset: str) -> list[str]:
    """Groups or prompts of one dataset found in more than one split, read from the files
    themselves."""
    files = sorted((release / dataset).glob("*.parquet"))
    if not files:
        return []
    frame = pl.scan_parquet(files)
    columns = [c for c in ("group_id", "prompt_hash") if c in frame.collect_schema()]
    problems = []
    for column in columns:
        straddling = (
            frame.group_by(column)
            .agg(pl.col("split").n_unique().alias("n"))
            .filter(pl.col("n") > 1)
            .collect()
        )
        if straddling.height:
            problems.append(
                f"{dataset}: {straddling.height} {column} values appear in more than one split"
            )
    return problems


def _rows(path: Path) -> int:
    """Rows of a Parquet file, lines of a JSONL file (store/openai_files.py)."""
    if path.name.endswith(SUFFIX):
        return line_count(path)
    return pq.ParquetFile(path).metadata.num_rows


def verify_release(release: Path) -> list[str]:
    """Every problem found; empty means the release is exactly what its manifest says. A
    release under a remote data root is checked on a temporary download of its objects."""
    if is_remote(release):
        with local_release(release) as folder:
            return verify_release(folder)
    if not (release / MANIFEST).exists():
        return [f"{release.name}: no {MANIFEST} (an incomplete release)"]
    manifest = read_manifest(release)
    problems = []
    listed = {f["path"] for f in manifest["files"]}
    present = {p.relative_to(release).as_posix() for p in release.rglob("*") if p.is_file()} - {
        MANIFEST
    }
    problems += [f"{path}: not in the manifest" for path in sorted(present - listed)]
    for entry in manifest["files"]:
        path = release / entry["path"]
        if not path.exists():
            problems.append(f"{entry['path']}: missing")
            continue
        if sha256_file(path) != entry["sha256"]:
            problems.append(f"{entry['path']}: sha256 differs from the manifest")
            continue
        if entry.get("rows") is not None and _rows(path) != entry["rows"]:
            problems.append(f"{entry['path']}: row count differs from the manifest")
    if problems:
        return problems
    problems += [
        f"split proof: {p}"
        for p in proof_problems(orjson.loads((release / SPLIT_PROOF).read_bytes()))
    ]
    for name, folder in manifest_folders(manifest).items():
        counts = manifest["counts"]
        said = counts[name] if name in counts else manifest["profiles"][name]["counts"]
        if split_counts(release, manifest["files"], folder) != said:
            problems.append(f"{name}: rows per split differ from the manifest's counts")
    for name, entry in (manifest.get(SECTION) or {}).items():
        if jsonl_counts(release, entry) != entry["counts"]:
            problems.append(f"{name}: lines per split differ from the manifest's counts")
    problems += minari_count_problems(release, manifest)
    for dataset in manifest["counts"]:
        problems += _split_overlaps(release, dataset)
    return problems
