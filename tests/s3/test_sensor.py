"""The raw-files sensor on an S3 raw root (moto on 127.0.0.1), evaluated with Dagster's
`build_sensor_context`: raw objects and the opt-out registry `consent/optouts.jsonl` both
request a build when they change, an object rewritten within the same second included."""

from __future__ import annotations

import time
from pathlib import Path

import dagster as dg

from pipelines.config.settings import Settings
from pipelines.definitions import build_definitions
from pipelines.orchestration.resources import TurnlakeResource
from pipelines.storage.objects import ObjectRoot

FIXTURES = Path(__file__).parents[1] / "fixtures" / "clean"
CONSENT = "consent/optouts.jsonl"


def _client(endpoint: str):
    import boto3

    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")


def _bucket_and_prefix(root: ObjectRoot) -> tuple[str, str]:
    bucket, _, prefix = root.uri.removeprefix("s3://").partition("/")
    return bucket, prefix


def _tick(sensor: dg.SensorDefinition, raw: str, cursor: str | None):
    context = dg.build_sensor_context(
        cursor=cursor,
        resources={"turnlake": TurnlakeResource(raw_root=raw, data_root=raw)},
    )
    return sensor.evaluate_tick(context)


def _put_in_one_second(client, bucket: str, key: str, bodies: list[bytes], between) -> list:
    """Put each body in turn (calling `between()` after each), all within one second of the
    store's clock: retried from the start of a new second until their Last-Modified agree."""
    for _ in range(5):
        time.sleep(1.02 - time.time() % 1)  # just past a second boundary
        results = []
        for body in bodies:
            client.put_object(Bucket=bucket, Key=key, Body=body)
            stamp = client.head_object(Bucket=bucket, Key=key)["LastModified"]
            results.append((stamp, between()))
        if len({stamp for stamp, _ in results}) == 1:
            return [result for _, result in results]
    raise AssertionError("could not write twice within one second of the store's clock")


def test_sensor_on_an_s3_raw_root_sees_objects_and_every_opt_out_change(s3_root, aws_env):
    client = _client(aws_env)
    bucket, prefix = _bucket_and_prefix(s3_root)
    for path in sorted((FIXTURES / "dialogues").rglob("*.jsonl")):
        key = f"{prefix}/dialogues/{path.relative_to(FIXTURES / 'dialogues').as_posix()}"
        client.upload_file(str(path), bucket, key)
    raw = s3_root.uri
    settings = Settings(raw_root=Path("unused-raw"), data_root=Path("unused-data"))
    sensor = build_definitions(settings).resolve_sensor_def("raw_files_changed")

    first = _tick(sensor, raw, None)
    assert len(first.run_requests) == 1 and first.cursor
    assert _tick(sensor, raw, first.cursor).run_requests == []

    # an opt-out added, then withdrawn and another one of the same length added in the same
    # second: Last-Modified and size are the same, the registry is not, and each asks a build
    consent_key = f"{prefix}/{CONSENT}"
    line_a = b'{"subject_kind": "participant", "subject_id": "p-aaaa"}\n'
    line_b = b'{"subject_kind": "participant", "subject_id": "p-bbbb"}\n'
    cursors = _put_in_one_second(
        client,
        bucket,
        consent_key,
        [line_a, line_b],
        lambda: _tick(sensor, raw, first.cursor).cursor,
    )
    assert first.cursor not in cursors
    assert cursors[0] != cursors[1]  # the same-size rewrite is a change
    assert _tick(sensor, raw, cursors[1]).run_requests == []  # and then nothing changed
