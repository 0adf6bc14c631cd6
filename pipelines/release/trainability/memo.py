"""The trainability problems of release files already checked, kept by the files' bytes.

A rebuild's release hard-links most files from the previous release, and every release is checked
twice (before it is published, then by the `release_is_trainable` check): a file whose sha256,
dataset, release setting and engine digest were checked before gives the problems it gave then
(hashing a file costs a fraction of reading and checking it). Kept at
`<data root>/.turnlake/trainability/memo.json` (a local folder for a remote data root); each save
keeps only the entries the last check used.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from pipelines.release.trainability.problems import Counted
from pipelines.storage.engine import engine_digest
from pipelines.storage.files import write_bytes_atomic
from pipelines.storage.fingerprint import fingerprint
from pipelines.storage.layout import Layout
from pipelines.storage.uri import as_root

Ranked = tuple[tuple[int, int, str], str]
MEMO_FILE = "memo.json"


def memo_dir(data_root: Path) -> Path:
    """Where the memo of a data root lives (state that is never released)."""
    return Layout(as_root(data_root)).trainability_memo


def entry_key(dataset: str, include_neutral: bool, sha256s: list[str]) -> str:
    """The key of the problems of these files (by their bytes) of one dataset."""
    return fingerprint([engine_digest(), dataset, str(include_neutral), *sha256s])


def _encoded(ranked: list[Ranked]) -> list:
    return [
        [list(rank), [p.dataset, p.what, p.n, p.examples] if isinstance(p, Counted) else p]
        for rank, p in ranked
    ]


def _decoded(entry: list) -> list[Ranked]:
    return [
        (tuple(rank), Counted(*p) if isinstance(p, list) else p)  # type: ignore[misc]
        for rank, p in entry
    ]


class TrainabilityMemo:
    """Problems found before, by entry key; `save` keeps the entries looked up since loading."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory
        self.known: dict[str, list] = {}
        self.used: dict[str, list] = {}
        path = directory / MEMO_FILE if directory is not None else None
        if path is not None and path.exists():
            try:
                self.known = orjson.loads(path.read_bytes())
            except orjson.JSONDecodeError:  # a memo is only a shortcut: start afresh
                self.known = {}

    def get(self, key: str) -> list[Ranked] | None:
        entry = self.known.get(key)
        if entry is None:
            return None
        self.used[key] = entry
        return _decoded(entry)

    def put(self, key: str, ranked: list[Ranked]) -> None:
        self.used[key] = _encoded(ranked)

    def save(self) -> None:
        if self.directory is None:
            return
        try:
            data = orjson.dumps(self.used)
        except TypeError:  # an example that is no JSON value: not kept, checked again next time
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(self.directory / MEMO_FILE, data)
