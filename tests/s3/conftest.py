"""A real S3 endpoint for the tests: moto's server on a free 127.0.0.1 port, one per session,
and a fresh bucket per test (the AWS variables pointed at it only inside that test)."""

from __future__ import annotations

import logging
import socket
import uuid
from collections.abc import Iterator

import pytest

from pipelines.storage.objects import ObjectRoot


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def point_aws_at(endpoint: str, mp: pytest.MonkeyPatch) -> None:
    """The standard AWS variables pointed at `endpoint`, and none that would override them."""
    for name, value in {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": "turnlake-test",
        "AWS_SECRET_ACCESS_KEY": "turnlake-test-secret",
        "AWS_REGION": "us-east-1",
    }.items():
        mp.setenv(name, value)
    for name in ("AWS_ENDPOINT_URL_S3", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        mp.delenv(name, raising=False)


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    """`http://127.0.0.1:<port>` of a running moto S3 server, stopped after the session."""
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # not one line per request
    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


@pytest.fixture
def aws_env(moto_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The standard AWS variables pointed at the moto server (as a user sets them for MinIO,
    Ceph or AWS itself); returns the endpoint."""
    point_aws_at(moto_endpoint, monkeypatch)
    return moto_endpoint


@pytest.fixture
def s3_root(aws_env: str) -> ObjectRoot:
    """`s3://<new bucket>/store`: an empty prefix in a bucket made for this test."""
    import boto3

    bucket = f"turnlake-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=aws_env, region_name="us-east-1").create_bucket(Bucket=bucket)
    return ObjectRoot.parse(f"s3://{bucket}/store")


@pytest.fixture(params=["local", "s3"])
def any_root(request: pytest.FixtureRequest, tmp_path) -> ObjectRoot:
    """The same test on a local folder and on S3."""
    if request.param == "local":
        return ObjectRoot.parse(tmp_path / "store")
    return request.getfixturevalue("s3_root")
