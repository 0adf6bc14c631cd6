"""Every digest the engine keys work on, built from a few blocks.

A stage (silver, gold, splits, release, a check, a parser) is skipped when the
fingerprint of what it is a function of equals the one recorded by its last run. Each fingerprint is
`fingerprint(parts)` over parts made here (the digest of a file's bytes, of a value as canonical
JSON) and the engine digest (storage/engine.py: the code and dependency
versions, the one code part of every key). The values are cache keys: they change with every
turnlake version (everything is then rebuilt once).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson


def fingerprint(parts: Iterable[str | bytes]) -> str:
    """sha256 over the parts, each prefixed by its length so no two lists of parts collide."""
    digest = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        digest.update(len(data).to_bytes(8, "big"))
        digest.update(data)
    return digest.hexdigest()


def sha256_file(path: Path) -> str:
    """sha256 of a file's bytes, read in blocks."""
    return _file_digest(path, hashlib.sha256())


def md5_file(path: Path) -> str:
    """MD5 of a file's bytes: what S3 names a single-part object's e-tag (to check a stored
    copy without reading it back; never a key of turnlake's own)."""
    return _file_digest(path, hashlib.md5(usedforsecurity=False))


def _file_digest(path: Path, digest: Any) -> str:
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def json_part(value: Any) -> bytes:
    """A value as canonical JSON (sorted keys; anything else as its str)."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS, default=str)
