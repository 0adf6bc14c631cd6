"""Listing an S3 raw root (moto on 127.0.0.1): what discovers every source lists the root once,
an empty-or-not check reads one page, and a rewritten object gets a new stamp in the next
listing."""

from __future__ import annotations

from pipelines.ingest.claimed import unrecognised_files
from pipelines.sources import listing, raw_state
from pipelines.sources.base import find_raw_files
from pipelines.storage.uri import as_root
from tests.s3.conftest import put_objects

PAGE = 1000  # keys per ListObjectsV2 page (S3's and moto's)


def _client(endpoint: str):
    import boto3

    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")


def _put_tree(client, uri: str, keys: list[str]) -> None:
    assert put_objects(client, uri, keys, b"{}\n") == len(keys)


def _lists(log) -> list[str]:
    """The ListObjectsV2 requests in a request log."""
    return [r.query for r in log if r.method == "GET" and "list-type=2" in r.query]


def test_the_not_recognised_list_lists_an_s3_root_once(s3_root, aws_env, moto_requests):
    oasst = [f"oasst/b{i % 3}/trees-{i:04d}.jsonl" for i in range(1100)]  # two pages
    others = ["dialogues/d0/c-1.jsonl", "outputs/run-1/meta.json", "notes/readme.txt"]
    _put_tree(_client(aws_env), s3_root.uri, [*oasst, *others])
    root = as_root(s3_root.uri)

    with moto_requests() as log:
        found = unrecognised_files(root)

    assert "notes/readme.txt" in found and not any(k.startswith("oasst/") for k in found)
    # the probe and every source's folders cut from one listing of the root (2 pages):
    # not one listing per source folder and another of everything
    assert len(_lists(log)) == -(-(len(oasst) + len(others)) // PAGE)


def test_an_empty_check_reads_one_page(s3_root, aws_env, moto_requests):
    _put_tree(_client(aws_env), s3_root.uri, [f"oasst/t-{i:04d}.jsonl" for i in range(1100)])
    with moto_requests() as log:
        assert not listing.is_empty(as_root(s3_root.uri))
    assert len(_lists(log)) == 2  # the bucket probe, and the first page of the root


def test_a_rewritten_object_has_a_new_stamp_in_the_next_listing_not_inside_one(s3_root, aws_env):
    client = _client(aws_env)
    key = "oasst/b0/trees.jsonl"
    _put_tree(client, s3_root.uri, [key])
    root = as_root(s3_root.uri)

    def stamps() -> dict[str, tuple]:
        found = find_raw_files("oasst", root, ["oasst/**/*.jsonl"])
        return {f.rel_path: (f.size, f.mtime_ns) for f in found}

    with raw_state.one_listing(root):
        before = stamps()
        bucket, _, prefix = s3_root.uri.removeprefix("s3://").partition("/")
        client.put_object(Bucket=bucket, Key=f"{prefix}/{key}", Body=b"[]\n")  # same size
        client.put_object(Bucket=bucket, Key=f"{prefix}/oasst/b1/new.jsonl", Body=b"{}\n")
        assert stamps() == before  # one listing: the root as it was when first listed
    after = stamps()
    assert set(after) == {key, "oasst/b1/new.jsonl"}
    assert after[key][0] == before[key][0] and after[key][1] != before[key][1]
