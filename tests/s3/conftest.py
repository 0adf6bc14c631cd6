"""A real S3 endpoint for the tests: moto's server on a free 127.0.0.1 port, one per session,
and a fresh bucket per test (the AWS variables pointed at it only inside that test)."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pytest

from pipelines.storage.objects import ObjectRoot

T = TypeVar("T")


# The shard count of the demo the S3 builds start from (a build the partition tests make anyway):
# one partition, as the project's turnlake.toml gives the demo, so a rewrite on S3 sends few
# objects.
DEMO_SHARDS = 1

# Requests the helpers below send at once: each waits on moto's server (a process of its own),
# so a few in flight keep both cores busy; boto3's clients are thread-safe.
CONCURRENT_REQUESTS = 8


def each_at_once(send: Callable[[T], object], items: Iterable[T]) -> int:
    """`send(item)` for every item, CONCURRENT_REQUESTS at a time; how many (the first error is
    raised)."""
    with ThreadPoolExecutor(CONCURRENT_REQUESTS) as pool:
        return sum(1 for _ in pool.map(send, items))


def put_objects(client, uri: str, keys: Iterable[str], body: bytes) -> int:
    """Put `body` at each key under `s3://bucket/prefix` `uri` (with boto3, not turnlake's
    code); how many."""
    bucket, _, prefix = uri.removeprefix("s3://").partition("/")
    return each_at_once(
        lambda key: client.put_object(Bucket=bucket, Key=f"{prefix}/{key}", Body=body), keys
    )


def upload(client, bucket: str, folder: Path, prefix: str) -> list[str]:
    """Upload a local tree with boto3 (not turnlake's code); the keys written."""
    files = {
        f"{prefix}/{path.relative_to(folder).as_posix()}": path
        for parent, _, names in os.walk(folder)
        for path in (Path(parent, name) for name in names)
    }
    each_at_once(lambda key: client.upload_file(str(files[key]), bucket, key), files)
    return list(files)


def copy_bucket(client, source: str, target: str) -> int:
    """Copy every object of bucket `source` into the new bucket `target` (inside the server, with
    boto3, not turnlake's code); how many."""
    client.create_bucket(Bucket=target)
    keys = [
        item["Key"]
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=source)
        for item in page.get("Contents", [])
    ]
    return each_at_once(
        lambda key: client.copy_object(
            Bucket=target, Key=key, CopySource={"Bucket": source, "Key": key}
        ),
        keys,
    )


def _cache_of(data_root: str) -> Path:
    """The local folder of a remote data root (its DuckDB warehouse)."""
    from pipelines.storage.layout import Layout
    from pipelines.storage.uri import as_root

    return Layout(as_root(data_root)).duckdb.parent


def _build_with_two_workers(raw: str, data: str, env: dict[str, str]) -> str:
    """`turnlake build --workers 2` in a process of its own, as a user runs it (its step processes
    start from its environment); what it printed."""
    args = ["build", "--raw-root", raw, "--data-root", data, "--log-level", "ERROR"]
    command = [sys.executable, "-m", "pipelines.cli", *args, "--workers", "2"]
    done = subprocess.run(command, check=False, capture_output=True, env=env)
    assert done.returncode == 0, done.stderr.decode()[-3000:] + done.stdout.decode()[-3000:]
    return done.stdout.decode()


@pytest.fixture(scope="session")
def demo_on_s3(moto_endpoint, tmp_path_factory, built_once) -> dict:
    """The demo's raw tree uploaded to `s3://<bucket>/raw` and built from there into
    `s3://<bucket>/data` by `turnlake build --workers 2` (both roots on S3, step processes of
    their own): the S3 build of test_raw_root.py and test_data_root.py, made once (both files run
    on one worker, `SAME_WORKER` in tests/conftest.py, so they share this worker's moto server).
    What it must give is the local build of the same raw files with the same key and settings:
    the 1-shard demo that the partition tests build once per test run (`demo_built`, read-only
    here; `key` and `config` are its pseudonym key and turnlake.toml, every S3 command's too).
    Also: what the build printed, its cache folder, and `pristine`: a bucket copied from the first
    right after the build, for the tests that change the data root (the first bucket's data root
    stays as built), with a copy of the local cache folder (the warehouse) the build made for the
    first."""
    import boto3

    from tests.graph.test_partitions_graph import KEY, demo_built

    tmp = tmp_path_factory.mktemp("s3demo")
    raw, local = demo_built(built_once, DEMO_SHARDS)
    config = local.parent / f"turnlake-{local.name}.toml"  # the one demo_built wrote
    (tmp / "dagster").mkdir()
    bucket, pristine = (f"turnlake-{uuid.uuid4().hex[:12]}" for _ in range(2))
    with pytest.MonkeyPatch.context() as mp:  # also the environment the build process starts with
        point_aws_at(moto_endpoint, mp)
        mp.setenv("TURNLAKE_PSEUDONYM_KEY", KEY)
        mp.setenv("TURNLAKE_CONFIG", str(config))
        mp.setenv("TURNLAKE_CACHE_DIR", str(tmp / "cache"))
        mp.setenv("DAGSTER_HOME", str(tmp / "dagster"))
        for name in ("TURNLAKE_RAW_ROOT", "TURNLAKE_DATA_ROOT"):
            mp.delenv(name, raising=False)
        client = boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1")
        client.create_bucket(Bucket=bucket)
        assert upload(client, bucket, raw, "raw")
        env = dict(os.environ)
        hints = _build_with_two_workers(f"s3://{bucket}/raw", f"s3://{bucket}/data", env)
        assert copy_bucket(client, bucket, pristine)
        # the warehouse of a remote root is a local file holding copies of its tables, in the
        # root's cache folder: the copied root's is the same bytes
        shutil.copytree(_cache_of(f"s3://{bucket}/data"), _cache_of(f"s3://{pristine}/data"))
    return {
        "raw": raw,
        "local": local,
        "key": KEY,
        "config": config,
        "bucket": bucket,
        "hints": hints,
        "cache": tmp / "cache",
        "pristine": pristine,
    }


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


# moto's server in a process of its own: in the test process its request threads would contend
# for one GIL with the code under test, and a request waits for the other thread's switch
# interval (a `forget` on S3 sends ~10 000 requests). Served by uvicorn (moto's WSGI app through
# uvicorn's WSGI adapter), not moto's own werkzeug server: werkzeug's development server closes
# the connection after every response and starts a thread per connection, so each request also
# paid a TCP connection and a thread on both sides (writing the response alone was ~23 % of the
# server's CPU in the S3 tests, profiled). Prints its port, serves until stdin closes.
MOTO_SERVER = (
    "import functools, socket, sys, threading, warnings\n"
    "from moto import backends\n"
    "from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app\n"
    "import uvicorn\n"
    "from uvicorn.middleware.wsgi import WSGIMiddleware\n"
    # moto's dispatcher lists its own package folder (a listdir and ~200 isdir calls) on every
    # request, under the lock every request thread takes: 14 % of the server's CPU in a forget
    # (profiled), and the requests wait on each other. The folder does not change while it serves.
    "backends.list_of_moto_modules = functools.cache(\n"
    "    lambda listed=backends.list_of_moto_modules: tuple(listed()))\n"
    "warnings.simplefilter('ignore', DeprecationWarning)\n"
    "app = WSGIMiddleware(DomainDispatcherApplication(create_backend_app), workers=8)\n"
    "config = uvicorn.Config(app, log_level='warning', access_log=False, lifespan='off')\n"
    "server = uvicorn.Server(config)\n"
    "sock = socket.socket()\n"
    "sock.bind(('127.0.0.1', 0))\n"
    "sock.listen(128)\n"  # before the port is printed: a first request is never refused
    "serving = threading.Thread(target=server.run, kwargs={'sockets': [sock]}, daemon=True)\n"
    "serving.start()\n"
    "print(sock.getsockname()[1], flush=True)\n"
    "sys.stdin.read()\n"
    "server.should_exit = True\n"
    "serving.join()\n"
)


@pytest.fixture(scope="session")
def moto_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`http://127.0.0.1:<port>` of a running moto S3 server, stopped after the session."""
    # moto's request recorder (off until `moto_requests` starts it) writes here, not in the cwd
    recording = tmp_path_factory.mktemp("moto") / "requests.jsonl"
    server = subprocess.Popen(
        [sys.executable, "-c", MOTO_SERVER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={**os.environ, "MOTO_RECORDER_FILEPATH": str(recording)},
        text=True,
    )
    try:
        port = int(server.stdout.readline())
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stdin.close()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


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


@dataclass(frozen=True)
class Request:
    """One request moto served: method, path (`/bucket/key`), query, body size, copy source."""

    method: str
    path: str
    query: str
    body_bytes: int
    copy_source: str | None


def _moto_api(endpoint: str, action: str) -> bytes:
    method = "GET" if action == "download-recording" else "POST"
    call = urllib.request.Request(f"{endpoint}/moto-api/recorder/{action}", method=method)
    with urllib.request.urlopen(call, timeout=30) as response:
        return response.read()


def _request(entry: dict) -> Request:
    from urllib.parse import unquote, urlsplit

    url = urlsplit(entry["url"])
    body = entry.get("body") or ""
    size = len(base64.b64decode(body)) if entry.get("body_encoded") else len(body.encode())
    headers = {name.lower(): value for name, value in entry["headers"].items()}
    return Request(
        entry["method"], unquote(url.path), url.query, size, headers.get("x-amz-copy-source")
    )


def _entries(recording: bytes) -> Iterator[dict]:
    """The recorder's entries: JSON objects one after the other. moto's threads write an entry
    and its newline in two calls, so two entries can share a line."""
    text, decoder, at = recording.decode(), json.JSONDecoder(), 0
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at == len(text):
            return
        entry, at = decoder.raw_decode(text, at)
        yield entry


@pytest.fixture
def moto_requests(moto_endpoint: str):
    """`with moto_requests() as log:` records every request moto serves inside the block
    (moto's own request recorder); `log` holds them as `Request`s once the block ends."""

    @contextmanager
    def record() -> Iterator[list[Request]]:
        log: list[Request] = []
        _moto_api(moto_endpoint, "reset-recording")
        _moto_api(moto_endpoint, "start-recording")
        try:
            yield log
        finally:
            _moto_api(moto_endpoint, "stop-recording")
            log += [
                _request(entry)
                for entry in _entries(_moto_api(moto_endpoint, "download-recording"))
            ]

    return record
