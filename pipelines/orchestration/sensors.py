"""Start a build when raw files are added, changed or removed."""

from __future__ import annotations

import hashlib
from pathlib import Path

import dagster as dg

from pipelines.config.settings import SOURCES
from pipelines.orchestration.resources import TurnlakeResource
from pipelines.privacy.optouts import OPTOUTS_FILE
from pipelines.sources import adapter
from pipelines.sources.base import RawFile
from pipelines.sources.listing import one_listing
from pipelines.storage.uri import as_root


def raw_root_signature(raw_root: Path) -> tuple[str, int]:
    """Digest of every discovered raw file's path, size and mtime (no file contents are read)."""
    digest = hashlib.sha256()
    n_files = 0
    with one_listing(raw_root):  # on S3: one listing of the root for every source
        files = [file for source in SOURCES for file in adapter(source).discover(raw_root)]
    for file in files:
        size, mtime_ns = file.stat()
        digest.update(f"{file.rel_path}\0{size}\0{mtime_ns}\n".encode())
        n_files += 1
    consent = _consent_stamp(raw_root)  # a new opt-out must trigger a rebuild too
    if consent is not None:
        digest.update(f"{OPTOUTS_FILE}\0{consent[0]}\0{consent[1]}\n".encode())
    return digest.hexdigest()[:32], n_files


def _consent_stamp(raw_root: Path) -> tuple[int, int] | None:
    """(size, mtime_ns or object stamp) of the opt-out registry, None when there is none. An S3
    object's stamp folds in its e-tag: Last-Modified alone has whole seconds, and a same-size
    rewrite within one second (an opt-out withdrawn and another added) must still count."""
    consent = RawFile("consent", raw_root / OPTOUTS_FILE, OPTOUTS_FILE.as_posix())
    try:
        return consent.stat()
    except FileNotFoundError:
        return None


def raw_files_sensor(job: dg.UnresolvedAssetJobDefinition) -> dg.SensorDefinition:
    @dg.sensor(
        name="raw_files_changed",
        job=job,
        minimum_interval_seconds=60,
        default_status=dg.DefaultSensorStatus.STOPPED,
        description="Requests a build when the set of raw files, their sizes or mtimes change.",
    )
    def _sensor(context: dg.SensorEvaluationContext, turnlake: TurnlakeResource):
        signature, n_files = raw_root_signature(as_root(turnlake.raw_root))
        if n_files == 0:
            return dg.SkipReason(f"no raw files under {turnlake.raw_root}")
        if signature == context.cursor:
            return dg.SkipReason("raw files unchanged since the last requested build")
        context.update_cursor(signature)
        return dg.RunRequest(
            run_key=signature,
            tags={"turnlake/raw_signature": signature, "turnlake/raw_files": str(n_files)},
        )

    return _sensor
