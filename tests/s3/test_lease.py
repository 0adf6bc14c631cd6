"""The data-root lock on S3 (a lease object, put-if-absent) and roots given as URIs."""

from __future__ import annotations

import time

import orjson
import pytest

from pipelines.api.roots import resolve_settings
from pipelines.cli.options import ROOT
from pipelines.storage import lease, objects
from pipelines.storage.layout import Layout
from pipelines.storage.lock import LEASE_KEY, DataRootBusy, data_root_lock, lock_holder
from pipelines.storage.uri import as_root


def _layout(s3_root) -> Layout:
    return Layout(as_root(s3_root.uri))


def test_a_held_s3_data_root_refuses_a_second_holder_naming_the_first(s3_root):
    layout = _layout(s3_root)
    with data_root_lock(layout):
        foreign = lease.lease_body("pid 1 on elsewhere", time.time() + 60)
        assert not objects.put_if_absent(s3_root, LEASE_KEY, foreign)
        assert lock_holder(layout).startswith("pid ")
    assert not objects.exists(s3_root, LEASE_KEY)  # released after
    objects.put_bytes(s3_root, LEASE_KEY, foreign)
    with pytest.raises(DataRootBusy, match="pid 1 on elsewhere"), data_root_lock(layout, wait=0.6):
        pass
    assert objects.get_bytes(s3_root, LEASE_KEY) == foreign  # a live lease is left alone


def test_an_expired_lease_is_taken_over(s3_root):
    layout = _layout(s3_root)
    dead = lease.lease_body("pid 1 on a dead machine", time.time() - 1)
    objects.put_bytes(s3_root, LEASE_KEY, dead)
    with data_root_lock(layout):
        taken = orjson.loads(objects.get_bytes(s3_root, LEASE_KEY))
        assert taken["owner"] != "pid 1 on a dead machine"
        assert taken["expires"] > time.time()
    assert not objects.exists(s3_root, LEASE_KEY)


def test_the_s3_lease_is_reentrant_within_a_process(s3_root):
    layout = _layout(s3_root)
    with data_root_lock(layout):
        with data_root_lock(layout):  # the CLI holds it around a run whose assets take it
            pass
        assert objects.exists(s3_root, LEASE_KEY)  # the outer holder still holds it
    assert not objects.exists(s3_root, LEASE_KEY)


def test_the_lease_is_renewed_while_held(s3_root, monkeypatch):
    monkeypatch.setattr(lease, "LEASE_SECONDS", 0.6)
    with data_root_lock(_layout(s3_root)):
        first = orjson.loads(objects.get_bytes(s3_root, LEASE_KEY))["expires"]
        time.sleep(0.8)  # past the first expiry: renewed every 0.2 s
        second = orjson.loads(objects.get_bytes(s3_root, LEASE_KEY))["expires"]
        # renewed past the first expiry (not compared with the clock now: on a loaded machine the
        # renewal thread may run late, which a 0.6 s lease cannot absorb but a real one does)
        assert second > first + 0.1


def test_an_s3_root_is_kept_as_a_uri_by_the_cli_and_the_api(aws_env):
    assert ROOT.convert("s3://bucket-a/some/prefix/", None, None) == "s3://bucket-a/some/prefix/"
    assert str(ROOT.convert("data/x", None, None)) == "data/x"
    settings = resolve_settings(data_root="s3://bucket-a/some/prefix/")
    assert str(settings.data_root) == "s3://bucket-a/some/prefix"
    assert str(settings.raw_root) == "s3://bucket-a/some/prefix/raw"
    assert str(settings.layout.snapshot_log("silver")) == (
        "s3://bucket-a/some/prefix/warehouse/tables/silver/_snapshots.jsonl"
    )
    assert settings.layout.duckdb.name == "warehouse.duckdb"
    assert not str(settings.layout.duckdb).startswith("s3:")  # DuckDB's file stays local


def test_a_root_with_another_scheme_is_a_usage_error():
    import click

    with pytest.raises(click.BadParameter, match="unsupported root"):
        ROOT.convert("gs://bucket/prefix", None, None)


def test_a_raw_root_in_a_missing_bucket_is_exit_2_not_a_traceback(aws_env, capsys, monkeypatch):
    from pipelines.cli.main import main

    monkeypatch.setenv("TURNLAKE_PSEUDONYM_KEY", "0123456789abcdef0123456789abcdef")

    assert main(["build", "--data-root", "s3://bucket-a/prefix"]) == 2
    assert "raw root s3://bucket-a/prefix/raw does not exist" in capsys.readouterr().err


def test_a_step_of_the_leased_run_goes_on_under_its_lease_one_step_at_a_time(s3_root):
    """`build --workers N` on S3: the run holds the lease object (another process's, here) and
    names its token in `.turnlake.lease`; a step process that joined that token takes the
    steps' lease instead, and only one step at a time; a process that did not join waits."""
    from pipelines.storage.lock import LEASE_FILE, STEPS_LEASE_KEY, join_run_lease

    layout = _layout(s3_root)
    run = lease.lease_body("pid 1 on the run's machine", time.time() + 60)
    objects.put_bytes(s3_root, LEASE_KEY, run)
    objects.put_bytes(s3_root, LEASE_FILE, b"run-token\n")
    with pytest.raises(DataRootBusy, match="the run's machine"), data_root_lock(layout, wait=0.3):
        pass
    join_run_lease("run-token")
    try:
        with data_root_lock(layout, wait=0.3):
            assert objects.exists(s3_root, STEPS_LEASE_KEY)
        assert not objects.exists(s3_root, STEPS_LEASE_KEY)
        other_step = lease.lease_body("pid 2, a step of the run", time.time() + 60)
        objects.put_bytes(s3_root, STEPS_LEASE_KEY, other_step)
        busy = pytest.raises(DataRootBusy, match="a step of the run")
        with busy, data_root_lock(layout, wait=0.3):
            pass
    finally:
        join_run_lease(None)
    assert objects.get_bytes(s3_root, LEASE_KEY) == run  # the run's lease is left alone
