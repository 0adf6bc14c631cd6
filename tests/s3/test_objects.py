"""The object-store layer on a local folder and on a real S3 endpoint (moto's server)."""

from __future__ import annotations

import hashlib
import threading

import pytest

from pipelines.storage import objects
from pipelines.storage.objects import ObjectRoot, ObjectStoreError


def test_parse_keeps_s3_uris_and_makes_local_paths_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert ObjectRoot.parse("s3://bucket/a/b/").uri == "s3://bucket/a/b"
    assert ObjectRoot.parse("s3://bucket").uri == "s3://bucket"
    assert ObjectRoot.parse("rel/dir").uri == str(tmp_path / "rel" / "dir")
    assert ObjectRoot.parse(f"file://{tmp_path}/x").uri == str(tmp_path / "x")
    assert ObjectRoot.parse(f"file://{tmp_path}/a%20root").uri == str(tmp_path / "a root")
    assert ObjectRoot.parse("s3://bucket/a").join("v1", "manifest.json").uri == (
        "s3://bucket/a/v1/manifest.json"
    )


@pytest.mark.parametrize("text", ["gs://bucket/x", "s3://", "s3:///prefix", ""])
def test_parse_refuses_what_is_not_a_root(text):
    with pytest.raises(ObjectStoreError):
        ObjectRoot.parse(text)


def test_put_get_list_delete_copy(any_root):
    objects.put_bytes(any_root, "v1/a/x.bin", b"x" * 10)
    objects.put_bytes(any_root, "v1/y.txt", b"y")
    objects.put_bytes(any_root, "v2/z.txt", b"z")
    assert objects.list_keys(any_root) == ["v1/a/x.bin", "v1/y.txt", "v2/z.txt"]
    assert objects.list_keys(any_root, "v1") == ["v1/a/x.bin", "v1/y.txt"]
    assert objects.get_bytes(any_root, "v1/a/x.bin") == b"x" * 10
    assert objects.sha256_of(any_root, "v1/y.txt") == hashlib.sha256(b"y").hexdigest()
    objects.copy(any_root, "v1/y.txt", any_root, "v3/y.txt")
    assert objects.get_bytes(any_root, "v3/y.txt") == b"y"
    objects.delete(any_root, "v1/y.txt")
    objects.delete(any_root, "v1/never-there")
    assert not objects.exists(any_root, "v1/y.txt")
    assert objects.exists(any_root, "v1/a/x.bin")
    with pytest.raises(FileNotFoundError, match="v1/y.txt"):
        objects.get_bytes(any_root, "v1/y.txt")


def test_a_missing_local_root_lists_nothing(tmp_path):
    assert objects.list_keys(ObjectRoot.parse(tmp_path / "absent")) == []


def test_copy_across_stores_and_download_are_byte_identical(tmp_path, s3_root):
    data = bytes(range(256)) * 50_000  # 12.8 MB: more than one streamed chunk
    (tmp_path / "big.bin").write_bytes(data)
    local = ObjectRoot.parse(tmp_path)
    objects.copy(local, "big.bin", s3_root, "k/big.bin")
    objects.copy(s3_root, "k/big.bin", s3_root.join("other"), "big.bin")
    objects.download(s3_root.join("other"), "big.bin", tmp_path / "back" / "big.bin")
    assert (tmp_path / "back" / "big.bin").read_bytes() == data


def test_put_if_absent_writes_once(any_root):
    assert objects.put_if_absent(any_root, "m.json", b"first")
    assert not objects.put_if_absent(any_root, "m.json", b"second")
    assert objects.get_bytes(any_root, "m.json") == b"first"


def test_compare_and_swap_moves_only_from_the_expected_value(any_root):
    assert objects.compare_and_swap(any_root, "LATEST", None, b"a")
    assert not objects.compare_and_swap(any_root, "LATEST", None, b"b")
    assert not objects.compare_and_swap(any_root, "LATEST", b"stale", b"c")
    assert objects.compare_and_swap(any_root, "LATEST", b"a", b"d")
    assert objects.get_bytes(any_root, "LATEST") == b"d"


def test_concurrent_compare_and_swap_has_exactly_one_winner(any_root):
    objects.put_bytes(any_root, "LATEST", b"v0")
    barrier = threading.Barrier(8)
    wins: list[bytes] = []

    def writer(n: int) -> None:
        barrier.wait()
        if objects.compare_and_swap(any_root, "LATEST", b"v0", f"v{n + 1}".encode()):
            wins.append(f"v{n + 1}".encode())

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(wins) == 1
    assert objects.get_bytes(any_root, "LATEST") == wins[0]


def test_an_unreachable_endpoint_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "y")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_MAX_RETRIES", "0")
    with pytest.raises(ObjectStoreError, match="s3://bucket/p/k"):
        objects.get_bytes(ObjectRoot.parse("s3://bucket/p"), "k")


def test_roots_in_one_bucket_see_only_their_own_keys(s3_root):
    """Roots at the bucket's top and under nested prefixes of one bucket (the store is shared by
    the bucket): keys are relative to each root, and `a` is no prefix of `ab`."""
    top = ObjectRoot.parse(s3_root.uri.rsplit("/", 1)[0])  # s3://<bucket>
    objects.put_bytes(top, "a/x.txt", b"1")
    objects.put_bytes(top, "ab/y.txt", b"2")
    objects.put_bytes(top.join("a", "deep"), "z.txt", b"3")
    assert objects.list_keys(top.join("a")) == ["deep/z.txt", "x.txt"]
    assert objects.list_keys(top.join("a"), "deep") == ["deep/z.txt"]
    assert objects.list_keys(top) == ["a/deep/z.txt", "a/x.txt", "ab/y.txt"]
    assert objects.get_bytes(top.join("a"), "deep/z.txt") == b"3"
    objects.copy(top.join("a"), "x.txt", top.join("a"), "copied.txt")
    assert objects.get_bytes(top, "a/copied.txt") == b"1"
    assert objects.compare_and_swap(top.join("ab"), "y.txt", b"2", b"4")
    assert objects.get_bytes(top, "ab/y.txt") == b"4"


def test_a_changed_endpoint_is_used_by_the_next_call(s3_root, monkeypatch):
    """Stores are reused between calls, but never past a change of the AWS settings they were
    made from (a test, or a user's shell, points the variables elsewhere)."""
    objects.put_bytes(s3_root, "k", b"v")
    assert objects.get_bytes(s3_root, "k") == b"v"
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("AWS_MAX_RETRIES", "0")
    with pytest.raises(ObjectStoreError, match="k"):
        objects.get_bytes(s3_root, "k")
