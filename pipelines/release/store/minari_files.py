"""A release's Minari datasets (exports/minari.py): `minari/turnlake/<view>/<split>-v0/data/…`,
made from the release's own `rl_steps` Parquet files, by `write_release` (with `[release]
minari`) and again by `forget` after it rewrote those files (the observations and actions hold
the rows' personal text); or, for any published release, by `export_minari` outside it (the
release, its manifest and content hash unchanged).

The manifest's `minari` section holds the format version, the folder and, per dataset id, its
view, split, episodes, steps and texts whose NUL was replaced; its files are listed with their
sha256 as every file is. `verify` compares the section's counts with the datasets' own metadata."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import orjson

from pipelines.exports.minari import FOLDER, write_minari
from pipelines.release.store.files import read_manifest
from pipelines.storage.fingerprint import sha256_file

SECTION = "minari"  # the manifest's key
RL_STEPS = "rl_steps"
_METADATA = "metadata.json"  # Minari's per dataset metadata, beside its data file


def rl_steps_files(manifest_files: list[dict]) -> list[str]:
    """The `rl_steps` Parquet files among a manifest's file entries (paths in the release)."""
    return sorted(
        e["path"]
        for e in manifest_files
        if e["path"].startswith(f"{RL_STEPS}/") and e["path"].endswith(".parquet")
    )


def write_release_minari(
    release: Path, parquet: list[str], splits: list[str], version: str
) -> dict:
    """Every Minari dataset of the release folder `release` from its `rl_steps` files `parquet`
    (relative paths), one per view and split of `splits`; the manifest's section."""
    return write_minari(release / FOLDER, [release / p for p in parquet], splits, version)


def rewrite_minari(release: Path, manifest: dict) -> None:
    """The Minari datasets made again from the (rewritten) `rl_steps` files of the release folder,
    with the manifest's section and file entries following (a release made before releases had
    them is left as it is)."""
    section = manifest.get(SECTION)
    if not section:
        return
    splits = list(dict.fromkeys(d["split"] for d in section["datasets"].values()))
    shutil.rmtree(release / section["path"])
    files = rl_steps_files(manifest["files"])
    manifest[SECTION] = write_release_minari(release, files, splits, manifest["version"])
    prefix = f"{section['path']}/"
    kept = [e for e in manifest["files"] if not e["path"].startswith(prefix)]
    written = [
        {"path": p.relative_to(release).as_posix(), "rows": None}
        | {"sha256": sha256_file(p), "bytes": p.stat().st_size}
        for p in sorted((release / section["path"]).rglob("*"))
        if p.is_file()
    ]
    manifest["files"] = sorted(kept + written, key=lambda e: e["path"])


def minari_count_problems(release: Path, manifest: dict) -> list[str]:
    """Each dataset of the manifest's section whose episodes or steps differ from what its own
    Minari metadata says (or that is missing)."""
    section = manifest.get(SECTION) or {}
    problems = []
    for dataset, said in (section.get("datasets") or {}).items():
        path = release / section["path"] / dataset / "data" / _METADATA
        if not path.exists():
            problems.append(f"{SECTION}: {dataset} is missing")
            continue
        meta = orjson.loads(path.read_bytes())
        if (meta.get("total_episodes"), meta.get("total_steps")) != (
            said["episodes"],
            said["steps"],
        ):
            problems.append(f"{SECTION}: {dataset} episodes or steps differ from the manifest")
    return problems


def export_minari(
    release: Path, target: Path, check: Callable[[Path, Path], list[str]] | None = None
) -> dict:
    """The Minari datasets of the published release folder `release` written to `target` (the
    `MINARI_DATASETS_PATH` to load them from; replaced whole if it exists: written beside it,
    checked, then swapped in), from its `rl_steps` files once their sha256 match its manifest, one
    per view and split of `rl_steps` as `[release] minari` would write them; the section
    `write_release_minari` returns. `check(release, datasets)`: the problems of the datasets
    written (trainability/minari_episodes.py). Raises ValueError when an `rl_steps` file differs
    from the manifest (the export would not be of the published rows) or `check` finds a problem
    (nothing is left at `target` then)."""
    manifest = read_manifest(release)
    entries = {e["path"]: e for e in manifest["files"]}
    files = rl_steps_files(manifest["files"])
    changed = [p for p in files if sha256_file(release / p) != entries[p]["sha256"]]
    if changed:
        raise ValueError(f"{len(changed)} rl_steps files differ from the manifest: {changed[:3]}")
    splits = list(manifest["counts"].get(RL_STEPS) or {})
    staging = target.with_name(f".tmp-{target.name}")
    shutil.rmtree(staging, ignore_errors=True)
    section = write_minari(staging, [release / p for p in files], splits, manifest["version"])
    problems = check(release, staging) if check is not None else []
    if problems:
        shutil.rmtree(staging)
        raise ValueError(f"the Minari datasets written do not match rl_steps: {problems[:3]}")
    if target.exists():
        shutil.rmtree(target)
    staging.rename(target)
    return section
