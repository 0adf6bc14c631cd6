"""Writing a release: content-addressed version, temporary folder, manifest last, then rename."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import orjson
import polars as pl
import pyarrow.parquet as pq

from pipelines.release.build.request import ReleaseRequest
from pipelines.release.card.changelog import diff_markdown
from pipelines.release.card.diff import diff_folders
from pipelines.release.card.meta import Config
from pipelines.release.card.openai import write_folder_cards
from pipelines.release.card.profiles import PROFILES_DIR, profile_frames
from pipelines.release.card.render import release_configs, render_card
from pipelines.release.store.files import (
    CARD,
    LEDGER,
    MANIFEST,
    SPLIT_PROOF,
    complete_releases,
    latest_release,
    manifest_content_hash,
    point_latest,
    read_manifest,
    split_files,
)
from pipelines.release.store.minari_files import RL_STEPS, write_release_minari
from pipelines.release.store.minari_files import SECTION as MINARI
from pipelines.release.store.openai_files import (
    SECTION,
    earlier_lines,
    jsonl_file,
    write_openai_files,
)
from pipelines.release.trainability.folder import Findings
from pipelines.release.trainability.record import RECORD, trainability_record
from pipelines.runtime.faults import crash_point
from pipelines.storage.durable import fsync_path, fsync_tree
from pipelines.storage.engine import engine_digest
from pipelines.storage.fingerprint import sha256_file
from pipelines.storage.objects import ObjectRoot
from pipelines.storage.uri import is_remote

SCHEMA_VERSION = "1"
# a check of the written folder (`write_release`): the folder, its files' sha256 by path and the
# previous release's manifest (None: there is none) -> its problems, or `Findings` with each file's
Check = Callable[[Path, dict[str, str], dict | None], "list[str] | Findings"]


def content_hash(request: ReleaseRequest) -> str:
    """Hash of what a release contains and how it was made: same inputs, same hash
    (build/batch_files.py)."""
    return request.staged.content_hash(request.config)


def existing_version(exports: Path, digest: str) -> str | None:
    for version in complete_releases(exports):
        if manifest_content_hash(exports / version) == digest:
            return version
    return None


def _write_profile(folder: Path, frame: pl.DataFrame, splits: list[str]) -> None:
    """A profile config's files: one per split of its dataset, empty when it keeps no row there
    (as the dataset's own, staged.py)."""
    folder.mkdir(parents=True)
    for split in splits:
        for name, part in split_files(frame.filter(pl.col("split") == split), split):
            part.write_parquet(folder / name, compression="zstd", statistics=True)


def _write_profiles(tmp: Path, request: ReleaseRequest) -> list[Config]:
    """Every profile config under profiles/<config>/ (card/profiles.py), with the splits of its
    dataset, also when it keeps no row."""
    configs = []
    profiles = request.config.get("profiles") or {}
    if not profiles:
        return []
    # profiles filter whole datasets: read them back
    datasets = {name: request.staged.whole(name) for name in request.staged.names}
    selected = profile_frames(datasets, profiles)
    for name, (_, dataset, frame) in selected.items():
        # the dataset's splits; `split_files` gives every one a file, also an empty one
        splits = list(dict.fromkeys(f["split"] for f in request.staged.files.get(dataset, [])))
        _write_profile(tmp / PROFILES_DIR / name, frame, splits)
        configs.append(Config(name, f"{PROFILES_DIR}/{name}", dataset, frame, tuple(splits)))
    return configs


def _write_openai(
    tmp: Path,
    version: str,
    layout: dict[str, list[dict]],
    sha256: dict[str, str],
    previous: tuple[Path, dict] | None,
) -> dict[str, dict]:
    """The OpenAI fine-tuning files (store/openai_files.py) from the datasets' files just moved
    in, every split of the dataset, with their folders' cards; the manifest's section. The lines
    of a file the previous release converted are copied from its OpenAI files."""
    parquet = {name: [f"{name}/{f['file']}" for f in files] for name, files in layout.items()}
    splits = {
        name: list(dict.fromkeys(f["split"] for f in files)) for name, files in layout.items()
    }
    earlier = earlier_lines(*previous) if previous is not None else {}
    openai = write_openai_files(tmp, parquet, splits, sha256, earlier)
    write_folder_cards(tmp, openai, version)
    return openai


def _write_minari(
    tmp: Path, version: str, request: ReleaseRequest, layout: dict[str, list[dict]]
) -> dict:
    """The Minari datasets (store/minari_files.py) from the `rl_steps` files just moved in, a
    dataset per view in every split of `rl_steps`, when the release's formats name them
    (`[release] minari`); the manifest's section (empty, and no folder, when they do not, or
    for a release without `rl_steps`: one made of a few datasets by hand)."""
    if MINARI not in request.config.get("formats", {}) or RL_STEPS not in layout:
        return {}
    files = layout[RL_STEPS]
    splits = list(dict.fromkeys(f["split"] for f in files))
    return write_release_minari(tmp, [f"{RL_STEPS}/{f['file']}" for f in files], splits, version)


def _manifest_base(version: str, digest: str, request: ReleaseRequest) -> dict:
    extra = {"as_of": request.as_of} if request.as_of else {}
    if request.agreement is not None:
        extra["rater_agreement"] = request.agreement
    labels = (request.proof.get("left_out") or {}).get("labels")
    if labels:  # rewards the [release] label minimum left out, by reason
        extra["labels_left_out"] = labels
    return {
        "version": version,
        "content_hash": digest,
        "created_at": datetime.now(UTC).isoformat(),
        "schema_version": SCHEMA_VERSION,
        "package_version": request.package_version,
        "git_commit": request.git_commit,
        "engine_digest": engine_digest(),  # storage/engine.py: code and dependency versions
        "config": request.config,
        "raw_files": request.raw_fingerprints,
        "table_versions": request.table_versions,
    } | extra


def _previous(exports: Path) -> tuple[Path, dict] | None:
    """The newest earlier release (its folder and manifest, read once): the card's changelog is
    the diff against it, and what its files already hold is not made again."""
    previous = latest_release(exports)
    if previous is None:
        return None
    return exports / previous, read_manifest(exports / previous)


def _changelog(previous: tuple[Path, dict] | None, tmp: Path, manifest: dict) -> str | None:
    """The diff against the newest earlier release, as the card's changelog."""
    if previous is None:
        return None
    old, old_manifest = previous
    return diff_markdown(diff_folders(old, tmp, old_manifest, manifest))


def _profile_counts(configs: list[Config]) -> dict[str, dict]:
    return {
        c.name: {
            "dataset": c.dataset,
            "path": c.path,
            "counts": {split: c.stats.rows.get(split, 0) for split in sorted(c.splits)},
        }
        for c in configs
        if c.name != c.dataset
    }


def _manifest(
    tmp: Path,
    base: dict,
    request: ReleaseRequest,
    layout: dict[str, list[dict]],
    configs: list[Config],
    openai: dict[str, dict],
    minari: dict,
    sha256: dict[str, str],
) -> dict:
    """The manifest of the complete temporary folder: provenance, row counts per split and every
    file's hash (the manifest itself is not yet written, so not listed), lines per split of the
    OpenAI files and the rows they left out, the Minari datasets' episodes and steps."""
    manifest = base | {
        "counts": {
            name: {f["split"]: 0 for f in layout.get(name, [])} for name in request.dataset_names()
        },
        "files": [],
    }
    if configs:
        manifest["profiles"] = _profile_counts(configs)
    manifest[SECTION] = openai
    if minari:  # only a release written with `[release] minari` has them
        manifest[MINARI] = minari
    for name, files in layout.items():
        for f in files:
            manifest["counts"][name][f["split"]] += f["rows"]
    written = {f"{n}/{f['file']}": f["rows"] for n, fs in layout.items() for f in fs}
    # what the next release reuses a file by (build/batch_files.py)
    reuse = {
        f"{n}/{f['file']}": {k: f[k] for k in ("rows_digest", "inputs") if f.get(k)}
        for n, fs in layout.items()
        for f in fs
    }
    for c in configs:
        written |= {f"{c.path}/{f}": n for f, n in _split_rows(tmp / c.path).items()}
    for config, entry in openai.items():
        written |= {jsonl_file(config, split): n for split, n in entry["counts"].items()}
    for path in sorted(p for p in tmp.rglob("*") if p.is_file()):
        rel = path.relative_to(tmp).as_posix()
        rows = written.get(rel)
        digest = sha256.get(rel) or sha256_file(path)
        entry = {"path": rel, "sha256": digest, "bytes": path.stat().st_size}
        manifest["files"].append(entry | {"rows": rows} | reuse.get(rel, {}))
    return manifest


def _split_rows(folder: Path) -> dict[str, int]:
    return {p.name: pq.ParquetFile(p).metadata.num_rows for p in sorted(folder.glob("*.parquet"))}


def write_release(
    exports: Path,
    version: str,
    digest: str,
    request: ReleaseRequest,
    check: Check | None = None,
) -> Path:
    """Write everything into a hidden temporary folder, the manifest last, then rename it into
    place.

    `check(folder, sha256, previous manifest)` runs on the temporary folder before its manifest
    is written and the rename; if it raises, the folder is removed and nothing is published,
    otherwise what it found is recorded in the manifest with the files checked
    (trainability/record.py). Under a remote data root the release is written into a local
    staging folder and published to `exports` as to a release store."""
    if is_remote(exports):
        return _write_remote(exports, version, digest, request, check)
    exports.mkdir(parents=True, exist_ok=True)
    tmp = exports / f".tmp-{version}-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    layout = request.staged.move_into(tmp)  # every dataset, empty files where it has no rows
    crash_point("release:after_datasets")
    (tmp / SPLIT_PROOF).write_bytes(
        orjson.dumps(request.proof, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS)
    )
    if request.redaction_ledger is not None:
        (tmp / LEDGER).write_bytes(
            orjson.dumps(
                request.redaction_ledger, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS
            )
        )
    # the datasets' files are final: hashed once, for the manifest and to know what the previous
    # release already holds
    sha256 = {
        f"{name}/{f['file']}": sha256_file(tmp / name / f["file"])
        for name, files in layout.items()
        for f in files
    }
    previous = _previous(exports)
    profiles = _write_profiles(tmp, request)
    openai = _write_openai(tmp, version, layout, sha256, previous)
    minari = _write_minari(tmp, version, request, layout)
    configs = release_configs(request, layout, profiles)
    base = _manifest_base(version, digest, request)
    changelog = _changelog(previous, tmp, base | {"files": _entries(sha256)})
    card = render_card(version, request, layout, configs, changelog, openai, minari)
    (tmp / CARD).write_text(card, encoding="utf-8")
    manifest = _manifest(tmp, base, request, layout, profiles, openai, minari, sha256)
    if check is not None:
        try:
            found = check(tmp, sha256, previous[1] if previous is not None else None)
        except Exception:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        # what was found, on which bytes: the `release_is_trainable` check reads it (record.py)
        manifest[RECORD] = trainability_record(tmp, found, manifest["files"])
    (tmp / MANIFEST).write_bytes(
        orjson.dumps(manifest, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS)
    )
    fsync_tree(tmp)
    crash_point("release:before_rename")
    target = exports / version
    os.rename(tmp, target)
    fsync_path(exports)  # the rename itself
    if request.as_of is None:  # a release of past tables never becomes LATEST
        point_latest(exports, version)
    return target


def _entries(sha256: dict[str, str]) -> list[dict]:
    return [{"path": path, "sha256": digest} for path, digest in sorted(sha256.items())]


def remove_abandoned(exports: Path) -> list[Path]:
    """Temporary folders of releases that never finished (a killed writer)."""
    removed = [p for p in exports.glob(".tmp-*") if p.is_dir()] if exports.is_dir() else []
    for path in removed:
        shutil.rmtree(path)
    return removed


def _write_remote(
    exports: Path,
    version: str,
    digest: str,
    request: ReleaseRequest,
    check: Check | None,
) -> Path:
    """S3 has no rename: write the release locally (beside a copy of the latest one, for the
    card's changelog), then publish it as release/store/stores.py does (data files, the manifest
    with put-if-absent, LATEST by compare-and-swap)."""
    from pipelines.release.store.fetch import fetch_release
    from pipelines.release.store.stores import publish_release, store_latest

    root = ObjectRoot.parse(str(exports))
    with tempfile.TemporaryDirectory(prefix="turnlake-release-") as folder:
        staging = Path(folder)
        previous = store_latest(root)
        if previous is not None:
            fetch_release(root, previous, staging / previous)
            point_latest(staging, previous)
        write_release(staging, version, digest, request, check)
        publish_release(staging / version, root)
    return exports / version
