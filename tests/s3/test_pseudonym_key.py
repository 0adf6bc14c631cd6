"""A new user on an S3 data root with no pseudonym key configured: every command that needs the
key stops before it does anything (exit 2, naming the variable and the setting), instead of
building everything and failing in the release step."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from dataclasses import replace

import boto3
import pytest

from pipelines.cli.main import main
from pipelines.config.settings import Settings
from pipelines.privacy.key import pseudonym_key
from pipelines.storage import objects


def _objects(endpoint: str, bucket: str) -> list[str]:
    """Every key in `bucket` (listed with boto3, not turnlake's code)."""
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    listed = client.list_objects_v2(Bucket=bucket)
    return [item["Key"] for item in listed.get("Contents", [])]


@pytest.fixture
def no_key(aws_env, tmp_path, monkeypatch) -> dict[str, str]:
    """A new bucket, and the environment of a user who set the AWS variables and nothing else
    (no key, no turnlake.toml naming a key file, the Dagster home and cache folders empty)."""
    bucket = f"turnlake-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=aws_env, region_name="us-east-1").create_bucket(Bucket=bucket)
    for name in ("TURNLAKE_PSEUDONYM_KEY", "TURNLAKE_CONFIG", "TURNLAKE_RAW_ROOT"):
        monkeypatch.delenv(name, raising=False)
    for folder in ("dagster", "cache"):
        (tmp_path / folder).mkdir()
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster"))
    monkeypatch.setenv("TURNLAKE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)  # no turnlake.toml here
    return {"bucket": bucket, "endpoint": aws_env, "data": f"s3://{bucket}/data"}


def _names_the_fix(message: str) -> None:
    assert "TURNLAKE_PSEUDONYM_KEY" in message
    assert "[privacy] pseudonym_key_file" in message
    assert "openssl rand -hex 32" in message
    assert "Traceback" not in message


def test_a_build_on_s3_without_a_key_stops_before_any_work_with_exit_2(no_key, tmp_path):
    """`turnlake build --demo-if-empty` as a new user runs it, in a process of its own: without
    the early check it writes demo raw files into the empty S3 raw root, ingests and builds them,
    and only the release step fails."""
    data = no_key["data"]
    raw = f"s3://{no_key['bucket']}/raw"
    args = ["build", "--raw-root", raw, "--data-root", data, "--demo-if-empty"]
    command = [sys.executable, "-m", "pipelines.cli", *args, "--log-level", "ERROR"]
    done = subprocess.run(command, check=False, capture_output=True, env=dict(os.environ))
    stderr = done.stderr.decode()
    assert done.returncode == 2, stderr[-3000:]
    _names_the_fix(stderr)
    assert data in stderr
    assert _objects(no_key["endpoint"], no_key["bucket"]) == []  # no raw file, no table, no lease
    assert list((tmp_path / "cache").iterdir()) == []  # no warehouse copy
    assert list((tmp_path / "dagster").iterdir()) == []  # no run


@pytest.mark.parametrize("command", [["release"], ["forget", "participant", "p-1"]])
def test_release_and_forget_on_s3_without_a_key_stop_before_any_work(no_key, command, capsys):
    """Without the check: `release` says the data root is not built (exit 2 too, another
    message), `forget` records a keyed tombstone with a key it cannot make (TypeError)."""
    assert main([*command, "--data-root", no_key["data"]]) == 2
    _names_the_fix(capsys.readouterr().err)
    assert _objects(no_key["endpoint"], no_key["bucket"]) == []  # no tombstone, no registry entry


def test_with_the_key_in_the_environment_the_build_goes_on(no_key, monkeypatch, capsys):
    """The same new user once the variable is set: the build goes on to the raw root (in a
    missing bucket here: exit 2 for that, not for the key)."""
    monkeypatch.setenv("TURNLAKE_PSEUDONYM_KEY", "0123456789abcdef0123456789abcdef")
    raw = f"s3://{no_key['bucket']}-missing/raw"
    assert main(["build", "--raw-root", raw, "--data-root", no_key["data"]]) == 2
    err = capsys.readouterr().err
    assert f"raw root {raw} does not exist" in err
    assert "TURNLAKE_PSEUDONYM_KEY" not in err


def _generating(data_root: str) -> Settings:
    """Settings of `data_root` with `[privacy] generate_key_on_s3 = true`."""
    settings = Settings().with_roots(None, data_root)
    return replace(settings, privacy=replace(settings.privacy, generate_key_on_s3=True))


def test_asked_for_a_generated_key_on_s3_it_is_made_once_in_the_bucket(no_key):
    key, origin = pseudonym_key(_generating(no_key["data"]))
    where = f"{no_key['data']}/.turnlake/pseudonym.key"
    assert origin == f"generated ({where})"
    assert len(key) == 64 and int(key, 16) >= 0  # 32 random bytes as hex
    assert _objects(no_key["endpoint"], no_key["bucket"]) == ["data/.turnlake/pseudonym.key"]
    assert pseudonym_key(_generating(no_key["data"]))[0] == key  # the same key the next time


def test_a_generated_key_already_in_the_bucket_is_used_not_replaced(no_key):
    """Another machine's build made it first (put-if-absent: its key wins)."""
    root = objects.ObjectRoot.parse(no_key["data"])
    objects.put_bytes(root, ".turnlake/pseudonym.key", b"another-machines-key-0123456789\n")
    key, _ = pseudonym_key(_generating(no_key["data"]))
    assert key == b"another-machines-key-0123456789"
