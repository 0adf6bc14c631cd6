"""Start a build when raw files are added, changed or removed."""

from __future__ import annotations

import dagster as dg

from pipelines.orchestration.build_record import read_raw_files, read_record, seed_from
from pipelines.orchestration.resources import TurnlakeResource
from pipelines.sources.raw_state import RawState, raw_state


def _skip_reason(raw: RawState, cursor: str | None, last_build_read_it: bool) -> str | None:
    if raw.n_files == 0:
        return "no raw files"
    if raw.racy:  # its stamps could still move without changing: look again next tick
        return "raw files are being written (changed in the last seconds)"
    if raw.digest == cursor:
        return "raw files unchanged since the last requested build"
    if last_build_read_it:
        return "the last successful build already read these raw files"
    return None


def raw_files_sensor(job: dg.UnresolvedAssetJobDefinition) -> dg.SensorDefinition:
    @dg.sensor(
        name="raw_files_changed",
        job=job,
        minimum_interval_seconds=60,
        default_status=dg.DefaultSensorStatus.STOPPED,
        description="Requests a build when a raw file (or the opt-out registry) under the raw "
        "root is added, changed or removed, as `turnlake build` itself decides it (the recorded "
        "listing plus one stat per file).",
    )
    def _sensor(context: dg.SensorEvaluationContext, turnlake: TurnlakeResource):
        settings = turnlake.settings()
        record = read_record(settings.layout)
        seed_from(record, settings)
        raw = raw_state(settings.raw_root)
        read = read_raw_files(record, settings, raw)
        reason = _skip_reason(raw, context.cursor, read)
        if reason is not None:
            if read:
                context.update_cursor(raw.digest)
            return dg.SkipReason(f"{reason} under {turnlake.raw_root}")
        context.update_cursor(raw.digest)
        return dg.RunRequest(
            run_key=raw.digest,
            tags={"turnlake/raw_signature": raw.digest, "turnlake/raw_files": str(raw.n_files)},
        )

    return _sensor
