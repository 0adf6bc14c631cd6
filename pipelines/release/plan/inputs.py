"""What a release is a function of, as one digest, so an unchanged build skips the release work.

The digest covers the bytes of every published table the release reads (silver, gold, splits,
the gold parameters; bytes, not file names or table versions, so a table republished unchanged
counts as the same), the raw file fingerprints the manifest lists, the release-relevant config,
a fingerprint of the pseudonym key (never the key) and the release code. The last
`make_release` records `{input_digest, version}` under exports/; a release rewritten by
`turnlake forget` (its manifest has a deletion log) is never reused for its old inputs."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

import orjson

from pipelines.config.settings import Settings
from pipelines.gold.params import PARAMS
from pipelines.release.store.files import complete_releases, read_manifest
from pipelines.schemas.gold import GOLD_MODELS
from pipelines.schemas.silver import SILVER_MODELS
from pipelines.storage import tables as stored
from pipelines.storage.engine import engine_digest
from pipelines.storage.files import write_bytes_atomic
from pipelines.storage.fingerprint import fingerprint, json_part
from pipelines.storage.layout import RELEASE_INPUTS, Layout

INPUTS_MARKER = RELEASE_INPUTS  # under exports/
_KEY_FINGERPRINT_MESSAGE = b"turnlake release inputs: pseudonym key fingerprint"


def key_fingerprint(key: bytes) -> str:
    """Changes with the key, reveals nothing about it."""
    return hmac.new(key, _KEY_FINGERPRINT_MESSAGE, hashlib.sha256).hexdigest()


def _published_parts(layout: Layout, as_of: datetime | None) -> Iterable[str]:
    """Each table's file bytes (not file names or versions: the same content republished is the
    same input) and the gold parameters."""
    tables = [("silver", t) for t in SILVER_MODELS] + [("gold", t) for t in GOLD_MODELS]
    for layer, table in tables:
        yield f"{layer}.{table}={stored.content_digest(layout, layer, table, as_of)}"
    yield f"params={stored.meta(layout, 'gold', PARAMS, as_of)}"


def release_inputs_digest(
    settings: Settings, key: bytes, raw_fingerprints: list[dict], as_of: datetime | None = None
) -> str:
    """Same digest, same release: see the module doc for what it covers."""
    config = {
        "privacy": settings.privacy.record(),
        "splits": settings.splits.record(),
        "release": [settings.release_kto_include_neutral, settings.release_sft_include_negative],
        "release_shape": settings.release_shape(),
        "key": key_fingerprint(key),
        "raw_files": raw_fingerprints,
    }
    published = list(_published_parts(Layout(settings.data_root), as_of))
    return fingerprint([*published, engine_digest(), json_part(config)])


def record_inputs(exports: Path, digest: str, version: str) -> None:
    """Remember which release the inputs `digest` gave (written after the release is in place)."""
    write_bytes_atomic(
        exports / INPUTS_MARKER, orjson.dumps({"input_digest": digest, "version": version})
    )


def release_for_inputs(exports: Path, digest: str) -> str | None:
    """The version the last release run made from exactly these inputs, if it still exists as
    made."""
    marker = exports / INPUTS_MARKER
    if not marker.exists():
        return None
    recorded = orjson.loads(marker.read_bytes())
    version = recorded.get("version")
    if recorded.get("input_digest") != digest or version not in complete_releases(exports):
        return None
    if "deletion_log" in read_manifest(exports / version):
        return None  # rewritten by `turnlake forget`: no longer what these inputs made
    return version
