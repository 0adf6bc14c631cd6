"""What the redactor made of each text in earlier releases, so a rebuild redacts only texts it
has not seen. Most of a release's redaction time is Python over distinct candidate strings, and a
nightly build with a few new files sees almost the same strings as the night before.

An entry is keyed by a MAC (keyed blake2b), under the pseudonym key, of the text the redactor saw
(subject ids already replaced by pseudonyms; never the text, and no plain hash a short text could
be guessed from) and holds the redacted text (null when unchanged) and the replacements per kind.
A memo is valid for one redaction config and one engine digest (storage/engine.py); it lives under
`<data root>/.turnlake/` (never in a release) and keeps only the entries the last release used,
so it does not grow without bound.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import polars as pl

from pipelines.privacy.redact import RedactionConfig
from pipelines.storage.engine import engine_digest
from pipelines.storage.files import read_parquet, write_parquet_atomic
from pipelines.storage.fingerprint import fingerprint, json_part
from pipelines.storage.layout import Layout
from pipelines.storage.uri import as_root

_SCHEMA = pl.Schema({"text_mac": pl.String, "cleaned": pl.String, "counts": pl.String})


def memo_fingerprint(config: RedactionConfig) -> str:
    """Changes with the redaction config and with the engine (the code that detects and gates)."""
    settings = {
        "org_names": sorted(config.org_names),
        "phone_regions": sorted(config.phone_regions),
        "kinds": sorted(config.kinds),
        "mac": "blake2b-128",
    }
    return fingerprint([json_part(settings), engine_digest()])[:20]


@dataclass
class RedactionMemo:
    key: bytes
    known: dict[str, tuple[str | None, dict[str, int]]] = field(default_factory=dict)
    used: dict[str, tuple[str | None, dict[str, int]]] = field(default_factory=dict)
    hits: int = 0
    # Set when a release reused privatized partitions without looking their texts up: their
    # entries are in `known`, not in `used`, and must survive the save.
    keep_known: bool = False
    # One shared entry per replacement counts for the texts the redactor left unchanged (nearly
    # all of them): a tuple and a dict per text cost about half the memo's memory.
    _unchanged: dict[tuple, tuple[None, dict[str, int]]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        # blake2b in keyed mode is a MAC (one C call: a third of what `hmac` costs per short text)
        self._mac_key = hashlib.sha256(b"turnlake redaction memo\0" + self.key).digest()

    def _mac(self, text: str) -> str:
        return hashlib.blake2b(text.encode(), key=self._mac_key, digest_size=16).hexdigest()

    def entry(
        self, cleaned: str | None, counts: dict[str, int]
    ) -> tuple[str | None, dict[str, int]]:
        """What the memo keeps of a text (`cleaned` None: unchanged); its counts are shared with
        other entries, so never changed in place."""
        if cleaned is not None:
            return cleaned, dict(counts)
        key = tuple(sorted(counts.items()))
        shared = self._unchanged.get(key)
        if shared is None:
            shared = self._unchanged[key] = (None, dict(counts))
        return shared

    def get(self, text: str) -> tuple[str, dict[str, int]] | None:
        """The cleaned text and replacements by kind an earlier release recorded for `text` (the
        counts are shared: read them, do not change them)."""
        mac = self._mac(text)
        entry = self.known.get(mac)
        if entry is None:
            return None
        self.used[mac] = entry
        self.hits += 1
        cleaned, counts = entry
        return (text if cleaned is None else cleaned), counts

    def put(self, text: str, cleaned: str, counts: dict[str, int]) -> None:
        self.used[self._mac(text)] = self.entry(None if cleaned == text else cleaned, counts)


def _path(data_root: Path, fingerprint: str) -> Path:
    return Layout(as_root(data_root)).redaction_memo(fingerprint)


def load_memo(data_root: Path, key: bytes, fingerprint: str) -> RedactionMemo:
    path = _path(data_root, fingerprint)
    memo = RedactionMemo(key)
    if path.exists():
        frame = read_parquet(path)
        if frame.schema == _SCHEMA:
            counts = frame["counts"].to_list()
            decoded = {
                text: orjson.loads(text) for text in set(counts)
            }  # few distinct: decode each once
            entries = zip(frame["cleaned"].to_list(), map(decoded.__getitem__, counts), strict=True)
            memo.known = dict(
                zip(
                    frame["text_mac"].to_list(),
                    (memo.entry(cleaned, found) for cleaned, found in entries),
                    strict=True,
                )
            )
    return memo


def save_memo(memo: RedactionMemo, data_root: Path, fingerprint: str) -> None:
    """Keep the entries this release used (and, when it reused privatized partitions, the ones it
    did not look up: `keep_known`); drop memos of other configs or code."""
    entries = memo.known | memo.used if memo.keep_known else memo.used
    encoded: dict[tuple, str] = {}
    counts = []
    for _, found in entries.values():
        key = tuple(sorted(found.items()))
        if key not in encoded:
            encoded[key] = orjson.dumps(dict(key)).decode()
        counts.append(encoded[key])
    frame = pl.DataFrame(
        {
            "text_mac": list(entries),
            "cleaned": [cleaned for cleaned, _ in entries.values()],
            "counts": counts,
        },
        schema=_SCHEMA,
    )
    path = _path(data_root, fingerprint)
    write_parquet_atomic(frame, path)
    for other in path.parent.glob("*.parquet"):
        if other != path:
            other.unlink(missing_ok=True)
