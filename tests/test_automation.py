"""The nightly schedule and the raw-files sensor, evaluated with Dagster's test contexts."""

import os
import shutil
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg

from pipelines.config.settings import Settings
from pipelines.definitions import build_definitions
from pipelines.orchestration.resources import TurnlakeResource

FIXTURES = Path(__file__).parent / "fixtures" / "clean"


def _defs(raw: Path, data: Path, **overrides) -> dg.Definitions:
    return build_definitions(replace(Settings(raw_root=raw, data_root=data), **overrides))


def test_nightly_schedule_uses_configured_cron_and_zone_and_requests_the_build(tmp_path):
    defs = _defs(tmp_path, tmp_path, schedule_cron="30 3 * * *", schedule_timezone="Europe/Berlin")
    schedule = defs.resolve_schedule_def("nightly_build")
    assert schedule.cron_schedule == "30 3 * * *"
    assert schedule.execution_timezone == "Europe/Berlin"
    context = dg.build_schedule_context(
        scheduled_execution_time=datetime(2026, 11, 21, 2, tzinfo=UTC)
    )
    request = schedule.evaluate_tick(context).run_requests[0]
    assert request.job_name in (None, "turnlake_build") and schedule.job_name == "turnlake_build"


def _tick(sensor: dg.SensorDefinition, raw: Path, cursor: str | None):
    context = dg.build_sensor_context(
        cursor=cursor,
        resources={"turnlake": TurnlakeResource(raw_root=str(raw), data_root=str(raw))},
    )
    return sensor.evaluate_tick(context)


def test_sensor_requests_a_run_for_new_raw_files_then_skips_until_they_change(tmp_path):
    raw = tmp_path / "raw"
    shutil.copytree(FIXTURES / "dialogues", raw / "dialogues")
    sensor = _defs(raw, tmp_path).resolve_sensor_def("raw_files_changed")

    first = _tick(sensor, raw, None)
    assert len(first.run_requests) == 1 and first.cursor
    unchanged = _tick(sensor, raw, first.cursor)
    assert unchanged.run_requests == [] and unchanged.skip_message

    changed_file = next((raw / "dialogues").rglob("*.jsonl"))
    changed_file.write_bytes(changed_file.read_bytes() + b"\n")
    os.utime(changed_file, ns=(1, 2))
    changed = _tick(sensor, raw, first.cursor)
    assert len(changed.run_requests) == 1 and changed.cursor != first.cursor


def test_sensor_skips_an_empty_raw_root(tmp_path):
    sensor = _defs(tmp_path, tmp_path).resolve_sensor_def("raw_files_changed")
    result = _tick(sensor, tmp_path / "nothing", None)
    assert result.run_requests == [] and "no raw files" in result.skip_message
