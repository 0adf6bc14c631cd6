"""What the trainability checks found on a release's files before it was published, kept in its
manifest (`trainability`), so that the `release_is_trainable` check judges it without reading
every file again.

The record names each checked file with the sha256 of the bytes checked (the manifest's
entries, hashed from the same files just before the check; nothing writes them in between) and
the engine digest of the code that checked them. It answers for the release only while both
still hold: a file rewritten since (`forget` rewrites releases and their manifests' hashes, an
operator may edit a file), a file added or removed, or other code means the files are checked
again. A release made before releases carried the record has none and is checked on its files.

The record also keeps what each Parquet file alone found (`by_file`, with `include_neutral`): a
file's findings are a function of its bytes, so the next release, checked by the same code with
the same `kto_include_neutral`, takes them for every file whose sha256 is one recorded here
instead of reading it again (folder.py `release_findings`).
"""

from __future__ import annotations

from pathlib import Path

from pipelines.release.store.files import MANIFEST, read_manifest
from pipelines.release.trainability.folder import Earlier, Findings, Ranked, checked_files
from pipelines.release.trainability.minari_episodes import minari_files
from pipelines.release.trainability.openai_lines import jsonl_files
from pipelines.release.trainability.problems import Counted
from pipelines.storage.engine import engine_digest
from pipelines.storage.fingerprint import sha256_file

RECORD = "trainability"  # the manifest's key


def _checked_paths(release: Path) -> list[str]:
    parquet = [file for files in checked_files(release).values() for file in files]
    others = [*jsonl_files(release), *minari_files(release)]
    return [file.relative_to(release).as_posix() for file in [*parquet, *others]]


def trainability_record(
    release: Path, found: list[str] | Findings, manifest_files: list[dict]
) -> dict:
    """The record of checking the files of `release` (not yet renamed into place), which found
    `found` (its problems, or `Findings` with each file's); `manifest_files`: the manifest's
    file entries (their sha256)."""
    sha256 = {entry["path"]: entry["sha256"] for entry in manifest_files}
    record = {
        "engine_digest": engine_digest(),
        "files": {path: sha256[path] for path in _checked_paths(release)},
        "problems": found.problems if isinstance(found, Findings) else found,
    }
    if isinstance(found, Findings):
        record["include_neutral"] = found.include_neutral
        record["by_file"] = {path: _to_json(r) for path, r in sorted(found.by_file.items())}
    return record


def _to_json(ranked: list[Ranked]) -> list:
    return [
        [list(rank), vars(p) if isinstance(p, Counted) else p]
        for rank, p in ranked  # a Counted's attributes: dataset, what, n, examples
    ]


def _from_json(found: list) -> list[Ranked]:
    return [
        ((rank[0], rank[1], rank[2]), Counted(**p) if isinstance(p, dict) else p)
        for rank, p in found
    ]


def earlier_findings(manifest: dict | None, include_neutral: bool) -> Earlier:
    """What a release's record (`manifest`: its manifest) says each of its Parquet files alone
    found, by (dataset, sha256 of the bytes checked); nothing unless this code checked them with
    this `include_neutral`."""
    record = (manifest or {}).get(RECORD) or {}
    if (
        record.get("engine_digest") != engine_digest()
        or record.get("include_neutral") != include_neutral
    ):
        return {}
    checked: dict[str, str] = record["files"]
    return {
        (path.split("/", 1)[0], checked[path]): _from_json(found)
        for path, found in record.get("by_file", {}).items()
        if path in checked
    }


def recorded_problems(release: Path) -> list[str] | None:
    """The problems the release's record says, when its files are the bytes checked and this
    is the code that checked them; None when the files must be checked (no record, or it no
    longer holds)."""
    if not (release / MANIFEST).exists():
        return None
    record = read_manifest(release).get(RECORD)
    if record is None or record.get("engine_digest") != engine_digest():
        return None
    checked: dict[str, str] = record["files"]
    if set(checked) != set(_checked_paths(release)):
        return None
    if any(sha256_file(release / path) != sha256 for path, sha256 in checked.items()):
        return None
    return list(record["problems"])
