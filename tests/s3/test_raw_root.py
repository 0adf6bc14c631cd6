"""A raw root on S3 (moto on 127.0.0.1): the demo's raw tree uploaded as objects builds the same
release as the local tree, with a local and with an S3 data root; a rebuild parses only the
objects added or changed since; `status` and `forget` work from it."""

from __future__ import annotations

import uuid
from pathlib import Path

import orjson
import pytest

from pipelines.cli.main import main
from pipelines.config.settings import settings_from_env
from pipelines.ingest.incremental import ingest_source
from pipelines.ingest.log import read_log
from pipelines.release.store.files import complete_releases, read_manifest
from pipelines.storage.layout import Layout
from pipelines.storage.uri import as_root
from tests.s3.conftest import point_aws_at

RATINGS = "ratings/ratings.jsonl"


@pytest.fixture(scope="module")
def raw_on_s3(moto_endpoint, tmp_path_factory, demo_on_s3):
    """The demo's raw tree, locally (with a local data root built from it) and as objects under
    `s3://<bucket>/raw`, with `s3://<bucket>/data` built from those (`demo_on_s3`)."""
    tmp = tmp_path_factory.mktemp("s3raw")
    mp = pytest.MonkeyPatch()
    point_aws_at(moto_endpoint, mp)
    env = {
        "TURNLAKE_PSEUDONYM_KEY": demo_on_s3["key"],  # the demo's key and settings
        "TURNLAKE_CONFIG": str(demo_on_s3["config"]),
        "TURNLAKE_CACHE_DIR": str(tmp / "cache"),
        "DAGSTER_HOME": str(tmp / "dagster"),
    }
    for name, value in env.items():
        mp.setenv(name, value)
    mp.delenv("TURNLAKE_RAW_ROOT", raising=False)
    (tmp / "dagster").mkdir()
    bucket = demo_on_s3["bucket"]
    yield {
        "tmp": tmp,
        "raw": demo_on_s3["raw"],
        "local": demo_on_s3["local"],
        "s3raw": f"s3://{bucket}/raw",
        "bucket": bucket,
    }
    mp.undo()


def _build(raw: str, data: str) -> str:
    """Build in this process; the content hash of the single release made."""
    args = ["build", "--raw-root", raw, "--data-root", data, "--log-level", "ERROR"]
    assert main(args) == 0
    return _content_hash(data)


def _content_hash(data: str | Path) -> str:
    """The content hash of the single release of a data root."""
    exports = Layout(as_root(data)).exports
    versions = complete_releases(exports)
    assert len(versions) == 1, versions
    return read_manifest(exports / versions[0])["content_hash"]


def test_an_s3_raw_root_gives_the_local_raw_roots_content_hash(raw_on_s3, demo_on_s3):
    """Also with both roots on S3 through 2 worker processes (`demo_on_s3`'s build): step
    processes of their own (the roots reach them through the run's config, the lease through
    its tag) give the same release (test_data_root.py's forget writes in this process)."""
    tmp, s3raw = raw_on_s3["tmp"], raw_on_s3["s3raw"]
    expected = _content_hash(raw_on_s3["local"])  # the demo built from its local raw root
    assert _build(s3raw, str(tmp / "from-s3")) == expected
    assert _content_hash(f"s3://{raw_on_s3['bucket']}/data") == expected
    # the hints name the release where it is, not a local cache
    hint = demo_on_s3["hints"]
    assert f"release: s3://{raw_on_s3['bucket']}/data/exports/" in hint
    assert f'data_root="s3://{raw_on_s3["bucket"]}/data")' in hint  # load_release reads it
    release_hint = hint[hint.index("release: s3://") :]  # the warehouse line names local DuckDB
    assert str(demo_on_s3["cache"]) not in release_hint
    # the ingest log names objects by their key under the raw root, as files locally
    local = read_log(Layout(raw_on_s3["local"]), "oasst")
    remote = read_log(Layout(tmp / "from-s3"), "oasst")
    assert remote["file"].sort().to_list() == local["file"].sort().to_list()


def _ingest(s3raw: str, data: Path, source: str):
    settings = settings_from_env().with_roots(s3raw, data)
    return ingest_source(source, settings, run_id=uuid.uuid4().hex)


def test_a_rebuild_from_s3_parses_only_added_and_changed_objects(raw_on_s3, moto_endpoint):
    import boto3

    s3raw, data = raw_on_s3["s3raw"], raw_on_s3["tmp"] / "incremental"
    client = boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1")
    bucket = raw_on_s3["bucket"]
    first = _ingest(s3raw, data, "oasst")
    assert first.files_parsed == first.files_seen > 0
    assert _ingest(s3raw, data, "oasst").files_parsed == 0  # nothing changed: nothing read
    key = "raw/oasst/more/deep/extra.jsonl"
    tree = {"message_id": "m-extra", "role": "prompter", "text": "hello", "replies": []}
    client.put_object(Bucket=bucket, Key=key, Body=orjson.dumps(tree) + b"\n")
    added = _ingest(s3raw, data, "oasst")
    assert (added.files_seen, added.files_parsed) == (first.files_seen + 1, 1)
    # rewritten with the same size (and likely within the same second): still re-parsed
    same_size = orjson.dumps({**tree, "text": "hellO"}) + b"\n"
    client.put_object(Bucket=bucket, Key=key, Body=same_size)
    assert _ingest(s3raw, data, "oasst").files_parsed == 1
    client.delete_object(Bucket=bucket, Key=key)
    gone = _ingest(s3raw, data, "oasst")
    assert gone.files_parsed == 0 and gone.files_missing == ["oasst/more/deep/extra.jsonl"]


def test_status_and_forget_work_from_an_s3_raw_root(raw_on_s3, capsys):
    s3raw, data = raw_on_s3["s3raw"], str(raw_on_s3["tmp"] / "from-s3")
    assert main(["status", "--raw-root", s3raw, "--data-root", data]) == 0
    assert "not supported" not in capsys.readouterr().err
    args = ["forget", "participant", "p-nobody", "--raw-root", s3raw, "--data-root", data]
    assert main(args) == 0
    root = as_root(s3raw)
    registry = (root / "consent" / "optouts.jsonl").read_bytes().splitlines()
    assert orjson.loads(registry[-1])["subject_id"] == "p-nobody"


def test_rate_appends_to_the_ratings_object_of_an_s3_raw_root(raw_on_s3, capsys):
    """`decision rate` with an S3 data root (built by `demo_on_s3`) and an S3 raw root: each
    rating is one more line of `ratings/ratings.jsonl` there, which the decision source reads."""
    from pipelines.sources import adapter

    s3raw, data = raw_on_s3["s3raw"], f"s3://{raw_on_s3['bucket']}/data"
    roots = ["--raw-root", s3raw, "--data-root", data]
    assert main(["decision", "list", "--unrated", "--json", *roots]) == 0
    listed = [orjson.loads(line) for line in capsys.readouterr().out.splitlines()]
    first, second = listed[0]["decision_id"], listed[1]["decision_id"]
    rate = ["decision", "rate", "--scale", "1-5", "--by", "user", *roots]
    assert main([*rate, first, "--rating", "4"]) == 0
    assert f"{s3raw}/{RATINGS}" in capsys.readouterr().out
    assert main([*rate, second, "--rating", "2", "--reason", "too late"]) == 0
    lines = (as_root(s3raw) / RATINGS).read_bytes().splitlines()
    events = [orjson.loads(line) for line in lines]
    assert [(e["decision_id"], e["rating"], e["reason"]) for e in events[-2:]] == [
        (first, 4.0, None),
        (second, 2.0, "too late"),
    ]
    decision = adapter("decision")
    [ratings] = [f for f in decision.discover(as_root(s3raw)) if f.rel_path == RATINGS]
    parsed = decision.parse_file(ratings, ratings.read_bytes(), settings_from_env())
    rows = parsed.rows["decision_rating_events"]
    assert [(r["decision_id"], r["rating"]) for r in rows[-2:]] == [(first, 4.0), (second, 2.0)]
