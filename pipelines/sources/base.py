"""What every source adapter shares: the vocabulary of quarantine reasons, raw-file handles,
parse results, quarantine rows, deterministic JSON text and ids. Reading typed values out of a
record is in `values`, JSON records out of bytes in `jsonio`.

No Dagster imports here: adapters are plain functions over bytes.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import polars_hash

from pipelines.schemas import bronze_frame
from pipelines.sources import listing
from pipelines.storage.uri import is_remote

# The fixed vocabulary of quarantine reasons. Keep it small: operators group by it.
ERROR_KINDS: tuple[str, ...] = (
    "invalid_json",  # not parseable as JSON
    "invalid_encoding",  # bytes that are not UTF-8 (beyond a cut multi-byte character)
    "truncated",  # a record or file that ends mid-way (and is not an active file's pending tail)
    "missing_field",  # a required field is absent or null
    "bad_type",  # a field has the wrong JSON type
    "bad_value",  # right type, impossible value (absurd timestamp, rating out of range, ...)
    "orphan",  # refers to something that does not exist (unknown conversation, turn)
    "duplicate_conflict",  # same id, different content, and no rule to pick one
    "too_large",  # exceeds a configured limit (record size, nesting depth, decompressed size)
    "unreadable",  # the file itself cannot be opened as its format (e.g. not SQLite)
)


class RecordError(Exception):
    """Raised by an adapter for one bad record; becomes one quarantine row."""

    def __init__(self, kind: str, message: str):
        if kind not in ERROR_KINDS:
            raise ValueError(f"unknown error kind {kind!r}")
        super().__init__(message)
        self.kind = kind
        self.message = message


@dataclass(frozen=True)
class RawFile:
    """One raw file of one source. `rel_path` (POSIX, relative to the raw root) is its identity.
    `path` is a local Path or, under an S3 raw root, an S3 UPath; an object's `size` and
    `mtime_ns` come from the listing that found it (a local file's are asked when needed).

    A local listing gives `root` (the raw root as a string) instead of a path: `path` is then made
    when first asked. Parsing a Path costs ~10 µs, and the process that plans an ingest asks only
    the names and stats of its files (136 k at 1 GB), the workers that read them their paths."""

    source: str
    given_path: Path | None = field(compare=False)
    rel_path: str
    size: int | None = field(default=None, compare=False)
    mtime_ns: int | None = field(default=None, compare=False)
    root: str | None = field(default=None, compare=False)

    @classmethod
    def under(cls, source: str, raw_root: Path, path: Path) -> RawFile:
        return cls(source, path, path.relative_to(raw_root).as_posix())

    @cached_property
    def path(self) -> Path:
        return self.given_path if self.given_path is not None else Path(self.root, self.rel_path)

    @property
    def is_remote(self) -> bool:
        return self.given_path is not None and is_remote(self.given_path)

    @property
    def local_path(self) -> Path | str:
        """The path to open a local file by: from a listing, the string alone (no Path made)."""
        return self.given_path if self.given_path is not None else f"{self.root}/{self.rel_path}"

    def stat(self) -> tuple[int, int]:
        """(size in bytes, modification time in ns, or an object's stamp)."""
        if self.size is not None and self.mtime_ns is not None:
            return self.size, self.mtime_ns
        if self.is_remote:
            return listing.head_object(self.path, self.rel_path)
        stat = os.stat(self.local_path)
        return stat.st_size, stat.st_mtime_ns

    def read_bytes(self) -> bytes:
        if self.is_remote:
            return listing.read_object(self.path, self.rel_path)
        return self.path.read_bytes()


def find_raw_files(source: str, raw_root: Path, patterns: Iterable[str]) -> list[RawFile]:
    """Regular files (objects) under `raw_root` matching any of the glob `patterns` (relative to
    it; `**` spans folders; hidden files included), sorted by relative path."""
    if not is_remote(raw_root):
        root = os.fspath(raw_root).rstrip("/") or "/"
        return [
            RawFile(source, None, rel, root=root) for rel in listing.local_matches(root, patterns)
        ]
    return [
        RawFile(source, raw_root / key, key, size, stamp)
        for key, size, stamp in listing.remote_matches(raw_root, list(patterns))
    ]


def dataset_of(rel_path: str) -> str:
    """`<source folder>/<dataset>/.../x.jsonl` → dataset; `<source folder>/x.jsonl` → `default`
    (the dialogue, OASST and HH-RLHF layouts)."""
    parts = rel_path.split("/")
    return parts[1] if len(parts) > 2 else "default"


def all_raw_files(raw_root: Path) -> list[str]:
    """Every regular file under `raw_root` as a relative POSIX path, sorted; hidden files and
    folders (`.DS_Store`, `.gitkeep`, `.git/`) are not raw data and are left out."""
    if is_remote(raw_root):
        return listing.all_remote_keys(raw_root)
    return listing.all_local_files(raw_root)


@dataclass(frozen=True)
class QuarantineRow:
    source: str
    file: str
    locator: str
    error_kind: str
    message: str
    raw: str | None


@dataclass(frozen=True)
class PendingTail:
    """The incomplete last record of an active file: reported, retried next run, not quarantined."""

    source: str
    file: str
    locator: str
    n_bytes: int


@dataclass
class ParseResult:
    """Everything one raw file turned into.

    Invariant checked downstream (nothing lost): `records_read` counts the raw records the
    reader *found* in the file, and each of them is exactly one bronze row (in any of
    `rows`) or one quarantine row. Pending tails are not records yet.

    Bronze rows stay Python dicts (`rows`, per bronze table): the ingest types them once per batch
    of files, because building a typed frame per small file cost more than parsing it; a large
    file's rows may come as `row_blocks.RowBlocks`, a sequence of dicts typed a block at a time.
    `tables` gives them as typed frames of their bronze contract.
    """

    records_read: int = 0
    rows: dict[str, Sequence[dict[str, Any]]] = field(default_factory=dict)
    quarantine: list[QuarantineRow] = field(default_factory=list)
    pending: list[PendingTail] = field(default_factory=list)
    # How many of `quarantine`, first, are records that are no JSON (a JSON Lines reader lists
    # them before the records its checks refused): a file parsed in parts keeps that order
    # across its parts (pipelines/ingest/parts.py).
    unparsed: int = 0

    @property
    def n_bronze(self) -> int:
        return sum(map(len, self.rows.values()))

    @property
    def tables(self) -> dict[str, pl.DataFrame]:
        return {table: bronze_frame(table, rows) for table, rows in self.rows.items()}


def raw_excerpt(raw: bytes | str | None, limit: int = 2000) -> str | None:
    if raw is None:
        return None
    if isinstance(raw, bytes):
        raw = raw[: limit * 4].decode("utf-8", errors="replace")
    return raw if len(raw) <= limit else raw[:limit] + f"… [{len(raw) - limit} more chars]"


_SORTED = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS


def dumps(obj: Any) -> str:
    """Deterministic JSON text (sorted keys) for attribute/extra columns and hashing."""
    return orjson.dumps(obj, option=_SORTED).decode()


def dumps_or_none(obj: Any) -> str | None:
    return None if obj is None or obj == {} else dumps(obj)


# ---------------------------------------------------------------- ids


def stable_hash(*parts: Any, length: int = 20) -> str:
    """Deterministic short hash of any JSON-able parts (same input, same id, every run): the
    sha256 of `dumps`' text, hashed as orjson's bytes (decoding and encoding them again copied
    every record a dialogue row is hashed from twice)."""
    return hashlib.sha256(orjson.dumps(list(parts), option=_SORTED)).hexdigest()[:length]


def content_hash(text: str | bytes) -> str:
    if isinstance(text, str):
        text = text.encode()
    return hashlib.sha256(text).hexdigest()


def sha256_hex(expr: pl.Expr) -> pl.Expr:
    """`content_hash` of every row in the plan: sha256 hex of a String's UTF-8 bytes (or of
    Binary), exactly hashlib's; null stays null (a column of type Null too).

    Native (Rust, the polars-hash plugin): hashing one Python string at a time cost up to a third
    of a release. Not Polars' own `hash`, which may change between Polars versions."""
    return polars_hash.CryptographicHashingNameSpace(expr.cast(pl.Binary)).sha2_256()


def quarantine_row(
    file: RawFile, locator: str, err: RecordError, raw: Any, limits: Any
) -> QuarantineRow:
    """A quarantine row for a record that parsed as JSON but broke a rule of its format."""
    text = raw if isinstance(raw, (bytes, str)) or raw is None else dumps_safe(raw)
    return QuarantineRow(
        file.source,
        file.rel_path,
        locator,
        err.kind,
        err.message,
        raw_excerpt(text, limits.raw_excerpt_chars),
    )


def dumps_safe(obj: Any) -> str:
    try:
        return dumps(obj)
    except (TypeError, orjson.JSONEncodeError):
        return repr(obj)


def too_large_file(file: RawFile, size: int, limit: int) -> ParseResult:
    """A file over `[limits] max_file_bytes`: one `too_large` quarantine row stands for it."""
    message = f"file is {size} bytes, limit is {limit}"
    row = QuarantineRow(file.source, file.rel_path, "file", "too_large", message, None)
    return ParseResult(records_read=1, quarantine=[row])
