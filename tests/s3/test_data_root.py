"""The whole graph on an `s3://` data root (moto on 127.0.0.1): the same release as on a local
data root, every read command, a killed run that leaves the previous snapshot readable, and a
`forget` after which no object under the root holds the subject."""

from __future__ import annotations

import io
import os
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import orjson
import polars as pl
import pytest

from pipelines.cli.main import main
from pipelines.release.store.files import complete_releases, read_manifest
from pipelines.release.store.stores import verify_stored
from pipelines.storage import objects
from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout
from pipelines.storage.objects import ObjectRoot
from pipelines.storage.uri import as_root
from tests.s3.conftest import CONCURRENT_REQUESTS, point_aws_at

REPO = Path(__file__).parents[2]


@pytest.fixture(scope="module")
def built(moto_endpoint, tmp_path_factory, demo_on_s3):
    """The demo built once on a local data root and once on an S3 one, from the same raw files
    (on S3: `demo_on_s3`'s build, in a bucket of this module's own, raw root included)."""
    tmp = tmp_path_factory.mktemp("s3root")
    mp = pytest.MonkeyPatch()
    point_aws_at(moto_endpoint, mp)
    env = {
        "TURNLAKE_PSEUDONYM_KEY": demo_on_s3["key"],  # the demo's key and settings
        "TURNLAKE_CONFIG": str(demo_on_s3["config"]),
        "TURNLAKE_CACHE_DIR": str(demo_on_s3["cache"]),  # the warehouse the build made
        "DAGSTER_HOME": str(tmp / "dagster"),
    }
    for name, value in env.items():
        mp.setenv(name, value)
    (tmp / "dagster").mkdir()
    bucket = demo_on_s3["pristine"]
    yield {
        "raw": f"s3://{bucket}/raw",
        "local": demo_on_s3["local"],
        "remote": f"s3://{bucket}/data",
        "env": dict(os.environ),
    }
    mp.undo()


def _manifest(exports) -> dict:
    versions = complete_releases(exports)
    assert len(versions) == 1, versions
    return read_manifest(exports / versions[0])


def test_s3_data_root_gives_the_local_release_content_hash(built):
    local = _manifest(Layout(built["local"]).exports)
    remote = _manifest(Layout(as_root(built["remote"])).exports)
    assert remote["content_hash"] == local["content_hash"]
    assert remote["counts"] == local["counts"]


def test_s3_data_root_objects_are_under_the_prefix(built):
    keys = objects.list_keys(ObjectRoot.parse(built["remote"]))
    assert any(k.startswith("warehouse/tables/silver/episodes/_delta_log/") for k in keys)
    assert any(k.startswith("warehouse/bronze/_ingest/") for k in keys)
    assert any(k.startswith("warehouse/tables/silver/_partition_passes/_delta_log/") for k in keys)
    assert any(k.startswith("reports/") for k in keys)
    assert "exports/LATEST" in keys
    # the lease is released after the build; DuckDB and Dagster stay on this machine
    assert ".turnlake.lock" not in keys
    assert not any(k.endswith(".duckdb") or k.startswith(".dagster") for k in keys)


def test_read_commands_work_on_an_s3_data_root(built, tmp_path, capsys):
    """(`status` and the rest alone: `test_command_works_on_an_s3_data_root`.)"""
    roots = ["--data-root", built["remote"], "--raw-root", str(built["raw"])]
    assert main(["sql", "--data-root", built["remote"], "SELECT count(*) AS n FROM episodes"]) == 0
    episodes = stored.read(Layout(built["local"]), "silver", "episodes").height
    assert f"│ {episodes} " in capsys.readouterr().out
    assert main(["release", *roots]) == 0
    assert main(["releases", "--data-root", built["remote"]]) == 0
    assert main(["verify", "latest", "--data-root", built["remote"]]) == 0
    assert main(["pull", "latest", "--to", str(tmp_path), "--data-root", built["remote"]]) == 0
    version = complete_releases(Layout(built["local"]).exports)[0]
    assert (tmp_path / version / "manifest.json").exists()


def _subjects(data_root: str, source: str) -> list[str]:
    """Groups (study participants, scenarios) of `source` that no quarantine row names: an old
    build report lists quarantined records, and `forget` does not rewrite reports (on a local
    data root neither)."""
    layout = Layout(as_root(data_root))
    episodes = stored.read(layout, "silver", "episodes")
    quarantine = stored.read(layout, "silver", "quarantine").write_ndjson()
    groups = set(episodes.filter(pl.col("source") == source)["group_id"])
    return sorted(p for p in groups if p not in quarantine)


def test_killed_run_on_s3_leaves_the_previous_snapshot_readable(built, forked_turnlake):
    remote, layout = built["remote"], Layout(as_root(built["remote"]))
    before = stored.snapshot(layout, "silver")
    rows = stored.read(layout, "silver", "episodes").height
    subject = _subjects(remote, "study")[0]  # withheld by the killed forget's rebuild
    env = {**built["env"], "TURNLAKE_KILL_AT": "silver:between_commits"}
    env["TURNLAKE_LEASE_SECONDS"] = "2"
    args = ["forget", "participant", subject, "--data-root", remote, "--raw-root", built["raw"]]
    killed = forked_turnlake.run(args, env=env, cwd=REPO)  # a process of its own
    assert killed.returncode == -9, killed.stderr[-2000:]
    after = stored.snapshot(layout, "silver")
    assert after == before  # a table was committed, but no snapshot names it
    assert stored.read(layout, "silver", "episodes").height == rows
    assert objects.exists(ObjectRoot.parse(remote), ".turnlake.lock")  # the dead holder's lease
    # its lease expires (2 s) and the next writer takes it over instead of failing
    assert (
        main(["release", "--data-root", remote, "--raw-root", str(built["raw"]), "--wait", "30"])
        == 0
    )


def _objects_holding(root: ObjectRoot, needle: str) -> list[str]:
    """Every object under `root` whose bytes, or decoded Parquet rows, hold `needle`."""

    def holds(key: str) -> bool:
        data = objects.get_bytes(root, key)
        decoded = (
            pl.read_parquet(io.BytesIO(data)).write_ndjson() if key.endswith(".parquet") else ""
        )
        return needle.encode() in data or needle in decoded

    keys = objects.list_keys(root)
    with ThreadPoolExecutor(CONCURRENT_REQUESTS) as pool:  # each get waits on moto's process
        return [key for key, held in zip(keys, pool.map(holds, keys), strict=True) if held]


def _bytes_of(root: ObjectRoot, keys: list[str]) -> dict[str, bytes]:
    with ThreadPoolExecutor(CONCURRENT_REQUESTS) as pool:
        return dict(
            zip(keys, pool.map(lambda key: objects.get_bytes(root, key), keys), strict=True)
        )


def test_after_forget_no_object_under_the_s3_root_holds_the_subject(built, moto_requests):
    remote = built["remote"]
    root = ObjectRoot.parse(remote)
    subject = _subjects(remote, "study")[1]  # not the one the killed-run test uses
    release = complete_releases(Layout(as_root(remote)).exports)[0]
    assert _objects_holding(root, subject)  # bronze, silver, gold
    stored_files = objects.list_keys(root, f"exports/{release}")
    before = _bytes_of(root, stored_files)
    args = ["forget", "participant", subject, "--data-root", remote]
    with moto_requests() as log:
        assert main([*args, "--raw-root", str(built["raw"])]) == 0
    assert _objects_holding(root, subject) == []
    # the release is rewritten in place: only the objects whose bytes changed are sent again
    after = _bytes_of(root, stored_files)
    changed = {key for key in stored_files if after[key] != before[key]}
    bucket_prefix = f"/{remote.removeprefix('s3://')}/"
    sent = {
        r.path.removeprefix(bucket_prefix)
        for r in log
        if r.method == "PUT" and r.path.startswith(f"{bucket_prefix}exports/{release}/")
    }
    assert sent == changed and f"exports/{release}/manifest.json" in sent
    assert len(sent) < len(stored_files)
    # the release made before it (pseudonymized ids, so found by its rows) was rewritten on S3
    manifest = orjson.loads(objects.get_bytes(root, f"exports/{release}/manifest.json"))
    assert manifest["deletion_log"][-1]["rows_removed"] > 0
    assert verify_stored(root.join("exports"), release) == []
    tombstones = objects.get_bytes(root, "privacy/tombstones.jsonl").splitlines()
    assert [orjson.loads(line)["subject_kind"] for line in tombstones][-1] == "participant"


def _some(built, what: str) -> str:
    """A value a command names: a decision id, a study participant, the release version."""
    remote = built["remote"]
    if what == "decision":
        from pipelines import api

        return api.list_decisions(data_root=remote, raw_root=built["raw"])["decision_id"][0]
    if what == "participant":
        return _subjects(remote, "study")[-1]
    return complete_releases(Layout(as_root(remote)).exports)[-1]


# every command that reads or writes a data root, with its arguments ({…} filled in per run)
# (`status`: test_status_on_an_s3_data_root_opens_each_ingest_log_once)
COMMANDS = {
    "sql": ["sql", "SELECT count(*) AS n FROM turns"],
    "sql-saved": ["sql", "--saved", "adaptations_followed_by_gains"],
    "report": ["report"],
    "releases": ["releases"],
    "verify-version": ["verify", "{version}"],
    "verify-latest": ["verify", "latest"],
    "pull-version-to-s3": ["pull", "{version}", "--to", "{store}"],
    "pull-latest-to-folder": ["pull", "latest", "--to", "{tmp}/pulled"],
    "diff": ["diff", "{version}", "{version}", "--json"],
    "subject-show": ["subject", "show", "participant", "{participant}"],
    "decision-list": ["decision", "list", "--json"],
    "decision-inspect": ["decision", "inspect", "{decision}", "--json"],
    "decision-replay": ["decision", "replay", "--persona", "{persona}", "--to", "{tmp}/replay"],
    "decision-compare": ["decision", "compare", "--json"],
}

# Only build, release and forget need the key (tests/s3/test_pseudonym_key.py): a user without it
# can still look at what is there. These run with the variable unset.
WITHOUT_KEY = {"sql", "report", "releases", "verify-latest", "decision-list"}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_command_works_on_an_s3_data_root(built, command, tmp_path, s3_root, capsys, monkeypatch):
    (tmp_path / "persona.txt").write_text("You are a careful moderator who rarely posts.\n")
    values = {
        "raw": str(built["raw"]),
        "tmp": str(tmp_path),
        "store": s3_root.uri,
        "persona": str(tmp_path / "persona.txt"),
    }
    args = COMMANDS[command]
    for what in ("version", "participant", "decision"):
        if any(f"{{{what}}}" in arg for arg in args):
            values[what] = _some(built, what)
    argv = [arg.format(**values) for arg in args]
    if command in WITHOUT_KEY:
        monkeypatch.delenv("TURNLAKE_PSEUDONYM_KEY")
    assert main([*argv, "--data-root", built["remote"]]) == 0, capsys.readouterr().err
    captured = capsys.readouterr()
    assert captured.out.strip() and "Traceback" not in captured.err
    if command in WITHOUT_KEY:
        assert "TURNLAKE_PSEUDONYM_KEY" not in captured.err
    if command == "pull-version-to-s3":
        assert verify_stored(s3_root, values["version"]) == []


def test_status_on_an_s3_data_root_opens_each_ingest_log_once(built, moto_requests, capsys):
    """Works without the key, and reads each ingest log's commits once, not once per part of
    the report that reads the log (a fresh open of a Delta table on S3 GETs every commit since
    its checkpoint: a dozen opens per log before)."""
    remote = built["remote"]
    args = ["status", "--raw-root", str(built["raw"]), "--data-root", remote]
    with pytest.MonkeyPatch.context() as mp, moto_requests() as log:
        mp.delenv("TURNLAKE_PSEUDONYM_KEY")
        assert main(args) == 0, capsys.readouterr().err
    captured = capsys.readouterr()
    assert captured.out.strip() and "Traceback" not in captured.err
    assert "TURNLAKE_PSEUDONYM_KEY" not in captured.err
    ingest = f"/{remote.removeprefix('s3://')}/warehouse/bronze/_ingest/"
    first_commit = "/_delta_log/" + "0" * 20 + ".json"
    opened = Counter(
        r.path
        for r in log
        if r.method == "GET" and r.path.startswith(ingest) and r.path.endswith(first_commit)
    )
    assert opened, "status read no ingest log"
    # one open of a table GETs its first commit twice (deltalake 1.x, measured); ~10 opens before
    assert max(opened.values()) <= 2, opened


def test_a_partition_run_on_s3_reads_the_committed_plan_and_waits_out_a_forget(
    built, moto_endpoint, monkeypatch
):
    """The plan the planner commits, a run's slice of it and the forget marker, on S3 (a copy
    of the built root with its one partition marked pending, as a killed run leaves it)."""
    import boto3

    from pipelines.api.roots import resolve_settings
    from pipelines.partitions.store import commit_silver_record, committed_silver_record, pending
    from pipelines.privacy.forget import forgetting
    from pipelines.privacy.optouts import OPTOUTS_FILE
    from pipelines.transforms import partition_run
    from tests.s3.conftest import copy_bucket

    source = built["remote"].removeprefix("s3://").partition("/")[0]
    bucket = f"{source}-runs"
    client = boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1")
    client.create_bucket(Bucket=bucket)
    assert copy_bucket(client, source, bucket)
    # no opt-outs (the forget test may have run): while the registry names anyone, runs do nothing
    client.delete_object(Bucket=bucket, Key=f"raw/{OPTOUTS_FILE}")
    settings = resolve_settings(raw_root=f"s3://{bucket}/raw", data_root=f"s3://{bucket}/data")
    layout = Layout(settings.data_root)
    key = committed_silver_record(layout)["_partition"][0]
    commit_silver_record(layout, pending([key]), [key])
    wanted, _ = partition_run.wanted_runs(settings)
    assert key in wanted and layout.partition_plan.exists()
    with forgetting(layout):
        assert layout.forgetting.exists()
        assert partition_run.refresh_partition(settings, key) == partition_run.FORGETTING
    assert not layout.forgetting.exists()

    def no_plan(_settings):
        raise AssertionError("the run planned again from bronze")

    monkeypatch.setattr(partition_run, "plan_silver", no_plan)
    assert partition_run.refresh_partition(settings, key) == partition_run.TRANSFORMED
    record = committed_silver_record(layout)
    assert record.filter(pl.col("_partition") == key)["inputs"].to_list() == [wanted[key]]
