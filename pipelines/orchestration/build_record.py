"""What the last fully successful build of a data root read and left behind, so that the next
`turnlake build` can tell cheaply that it would change nothing (the no-change fast path).

The record names the build's inputs as digests (`input_parts`: the raw files, settings, reward
parameters, pseudonym key, code and libraries, and which roots) taken before it ran, and the state
of the data root it left (`data_root_state`: the stamps of every file a publish, an ingest, a
release or a forget replaces) taken after it ran. It is written atomically at
`.turnlake/last_build.json`, only after a build that fully succeeded, and removed before any
other build runs, so a build that failed or was killed leaves none. A data root on object storage
keeps no record: there a build always runs.

Beside the raw state it also keeps the listing of the raw tree the build walked (every folder's
stamp and names: sources/raw_state.py), so that the next build's walk reads again only the
folders whose stamps moved; it is used only for the same raw root and engine, and goes with the
record.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any

import orjson

from pipelines.config.scores import load_scores, scores_digest
from pipelines.config.settings import Settings
from pipelines.privacy.key import configured_key
from pipelines.privacy.pseudonyms import PseudonymKeyError
from pipelines.release.store.files import latest_release
from pipelines.sources.raw_state import RawState, kept_listing, seed_listing
from pipelines.storage.engine import engine_digest
from pipelines.storage.files import write_bytes_atomic
from pipelines.storage.fingerprint import fingerprint
from pipelines.storage.layout import Layout
from pipelines.storage.uri import is_remote

RECORD_VERSION = 1
_LAYERS = ("silver", "gold", "splits")
NO_KEY = "none yet"  # no key configured or generated: the build generates one
UNUSABLE_KEY = "unusable"  # a configured key that cannot be read: the build stops before it runs


@dataclass(frozen=True)
class BuildRecord:
    run_id: str
    finished_at: str  # ISO time the build finished
    inputs: dict[str, str]  # part name → digest (`input_parts`)
    data_root: str  # `data_root_state` after the build
    outcome: dict[str, Any] = field(default_factory=dict)  # what the build printed (summary …)
    # the raw tree as the build walked it (`listing_part`), for the next build's walk
    listing: dict[str, Any] = field(default_factory=dict)

    def differences(self, inputs: dict[str, str], data_root: str) -> list[str]:
        """The parts (names) in which now differs from this record; empty: nothing changed."""
        names = sorted(set(self.inputs) | set(inputs))
        changed = [name for name in names if self.inputs.get(name) != inputs.get(name)]
        return changed + (["data root"] if self.data_root != data_root else [])


def read_record(layout: Layout) -> BuildRecord | None:
    """The data root's record; None when there is none, it is unreadable or of another version."""
    if layout.is_remote:
        return None
    try:
        raw = orjson.loads(layout.last_build.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    if not isinstance(raw, dict) or raw.pop("version", None) != RECORD_VERSION:
        return None
    try:
        return BuildRecord(**raw)
    except TypeError:
        return None


def write_record(layout: Layout, record: BuildRecord) -> None:
    if layout.is_remote:
        return
    body = orjson.dumps({"version": RECORD_VERSION, **asdict(record)}, option=orjson.OPT_SORT_KEYS)
    write_bytes_atomic(layout.last_build, body)


def drop_record(layout: Layout) -> None:
    """Remove the record before a build runs: until it fully succeeds, nothing may match it."""
    if layout.is_remote:
        return
    try:
        os.remove(layout.last_build)
    except FileNotFoundError:
        pass


def listing_part(settings: Settings) -> dict[str, Any]:
    """The listing of the raw root this process holds, with what it may be used for."""
    root = os.path.abspath(str(settings.raw_root))
    return {"root": root, "engine": engine_digest(), "folders": kept_listing(root)}


def seed_from(record: BuildRecord | None, settings: Settings) -> None:
    """Let the walks of this process start from the listing `record` kept, when it is of this
    raw root and engine (another engine may list otherwise)."""
    listing = {} if record is None else record.listing
    root = os.path.abspath(str(settings.raw_root))
    if listing.get("root") == root and listing.get("engine") == engine_digest():
        seed_listing(root, listing.get("folders") or {})


# ---------------------------------------------------------------- inputs


def _plain(value: Any) -> Any:
    """JSON for values orjson does not know, the same in every process (sets sorted)."""
    if isinstance(value, set | frozenset):
        return sorted(value, key=str)
    if hasattr(value, "model_dump"):
        return value.model_dump()
    if is_dataclass(value):
        return {f.name: getattr(value, f.name) for f in fields(value)}
    return str(value)


def _json(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS, default=_plain)


def _file_bytes(path: Path | None) -> bytes:
    try:
        return path.read_bytes() if path is not None else b"absent"
    except OSError:
        return b"unreadable"


def pseudonym_key_digest(settings: Settings) -> str:
    """A digest of the pseudonym key a release would use (never the key), without generating
    one: the configured key (an unusable one: `UNUSABLE_KEY`), else the one generated under a
    local data root, else `NO_KEY` (an S3 data root never has a generated one: privacy/key.py)."""
    try:
        key = configured_key(settings)
    except PseudonymKeyError:
        return UNUSABLE_KEY
    if key is None:
        generated = Layout(settings.data_root).generated_pseudonym_key
        if is_remote(settings.data_root) or not generated.exists():
            return NO_KEY
        key = _file_bytes(generated).strip()
    return fingerprint(["turnlake pseudonym key", key])


def roots_part(settings: Settings) -> str:
    return fingerprint(
        [os.path.abspath(str(settings.raw_root)), os.path.abspath(str(settings.data_root))]
    )


def read_raw_files(record: BuildRecord | None, settings: Settings, raw: RawState) -> bool:
    """`record` names a build of these roots that read exactly the raw files `raw` describes."""
    return (
        record is not None
        and not raw.racy
        and record.inputs.get("roots") == roots_part(settings)
        and record.inputs.get("raw files") == raw.digest
    )


def input_parts(settings: Settings, raw: RawState, params: dict[str, Any]) -> dict[str, str]:
    """Digest per input a build reads; equal parts mean the build would read the same."""
    return {
        "roots": roots_part(settings),
        "raw files": raw.digest,
        "settings": fingerprint([_json(settings), _file_bytes(settings.config_path)]),
        "reward parameters": fingerprint([_json(params)]),
        "score configs": fingerprint([scores_digest(load_scores())]),
        "pseudonym key": pseudonym_key_digest(settings),
        "code": engine_digest(),
    } | _evaluation_sets(settings)


def _evaluation_sets(settings: Settings) -> dict[str, str]:
    """The bytes of the evaluation sets a release is decontaminated against (none configured: no
    part, as before they existed)."""
    from pipelines.release.privatize.decontaminated import eval_files_digest

    if not settings.release_decontaminate:
        return {}
    return {"evaluation sets": fingerprint(eval_files_digest(settings))}


# ---------------------------------------------------------------- the data root


def _stamp(path: Path, base: Path) -> str:
    try:
        info = os.stat(path)
    except OSError:
        return f"{path.relative_to(base)}|missing"
    stamps = (info.st_size, info.st_mtime_ns, info.st_ino)
    return f"{path.relative_to(base)}|" + "|".join(map(str, stamps))


def _subfolders(folder: Path) -> list[Path]:
    try:
        return sorted(Path(e.path) for e in os.scandir(folder) if e.is_dir())
    except OSError:
        return []


def _bronze_logs(layout: Layout) -> list[Path]:
    """The `_delta_log` folders of bronze, parse quarantine and ingest logs: a new commit adds a
    file there, which moves the folder's stamps."""
    bronze = layout.warehouse / "bronze"
    tables = [t for t in _subfolders(bronze) if t.name not in ("_quarantine", "_ingest")]
    tables += _subfolders(bronze / "_quarantine") + _subfolders(bronze / "_ingest")
    return [table / "_delta_log" for table in tables]


def _release_files(layout: Layout) -> list[Path]:
    """Every file of the release `LATEST` names (a forget rewrites releases in place)."""
    version = latest_release(layout.exports)
    if version is None:
        return []
    found = []
    for folder, _, names in os.walk(layout.release(version)):
        found += [Path(folder, name) for name in names]
    return sorted(found)


def data_root_state(layout: Layout) -> str:
    """Digest of the stamps (size, mtime, inode) of what a build, release or forget
    replaces: each layer's snapshot log, each bronze Delta log, the exports folder and its
    `LATEST`, every file of the latest release, the tombstones and the DuckDB file."""
    if layout.is_remote:  # no record is kept there: a build always runs
        return ""
    root = layout.data_root
    paths = [layout.snapshot_log(layer) for layer in _LAYERS]
    paths += _bronze_logs(layout)
    paths += [layout.exports, layout.latest, *_release_files(layout)]
    paths += [layout.tombstones, layout.duckdb]
    return fingerprint([_stamp(path, root) for path in paths])
