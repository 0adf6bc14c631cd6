"""Releases in an S3 store (moto's server on 127.0.0.1): pull to and from it, verify there,
publish from `turnlake release`, crash points and concurrent publishers."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import orjson
import pytest

from pipelines import api
from pipelines.cli.main import main
from pipelines.release.store import stores
from pipelines.release.store.files import CARD, MANIFEST, latest_release, read_manifest
from pipelines.storage import objects
from pipelines.storage.fingerprint import sha256_file
from pipelines.storage.layout import Layout


@pytest.fixture
def exports(demo_warehouse: Path) -> Path:
    return Layout(demo_warehouse).exports


def _files(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }


def _later_copy(exports: Path, tmp_path: Path, hex_tail: str, created_at: str) -> Path:
    """A second complete release: the demo release's files under another version name, its
    manifest saying it was created at `created_at` (the manifest lists no hash of itself)."""
    version = latest_release(exports)
    new = tmp_path / f"{version[:9]}{hex_tail}"
    shutil.copytree(exports / version, new)
    manifest = orjson.loads((new / MANIFEST).read_bytes())
    manifest["created_at"] = created_at
    (new / MANIFEST).write_bytes(orjson.dumps(manifest))
    return new


def test_pull_to_s3_and_back_is_byte_identical_and_verifies(
    exports, demo_warehouse, s3_root, tmp_path
):
    version = latest_release(exports)
    code = main(["pull", "latest", "--to", s3_root.uri, "--data-root", str(demo_warehouse)])
    assert code == 0
    listed = api.releases(data_root=demo_warehouse, store=s3_root.uri)
    assert listed["version"].to_list() == [version] and listed["latest"].to_list() == [True]
    assert objects.get_bytes(s3_root, "LATEST") == f"{version}\n".encode()
    assert main(["verify", "--store", s3_root.uri, "--data-root", str(demo_warehouse)]) == 0
    back = tmp_path / "back"
    assert main(["pull", version, "--store", s3_root.uri, "--to", str(back)]) == 0
    assert _files(back / version) == _files(exports / version)


def test_verify_on_s3_finds_a_changed_object(exports, demo_warehouse, s3_root):
    version = latest_release(exports)
    api.pull("latest", s3_root.uri, data_root=demo_warehouse)
    target = next(
        f["path"] for f in read_manifest(exports / version)["files"] if f["path"].startswith("sft/")
    )
    objects.put_bytes(s3_root, f"{version}/{target}", b"not the released bytes")
    with pytest.raises(api.ReleaseMismatch) as mismatch:
        api.verify(version, data_root=demo_warehouse, store=s3_root.uri)
    assert mismatch.value.problems == [f"{target}: sha256 differs from the manifest"]
    assert main(["verify", version, "--store", s3_root.uri]) == 1


def test_pulling_what_is_already_in_the_store_changes_nothing(exports, demo_warehouse, s3_root):
    first = api.pull("latest", s3_root.uri, data_root=demo_warehouse)
    again = api.pull("latest", s3_root.uri, data_root=demo_warehouse)
    assert first.created and not again.created
    assert first.path == again.path == f"{s3_root.uri}/{latest_release(exports)}"


def test_a_crash_between_data_files_and_manifest_leaves_the_previous_latest(
    exports, demo_warehouse, s3_root, tmp_path
):
    old = latest_release(exports)
    api.pull(old, s3_root.uri, data_root=demo_warehouse)
    newer = _later_copy(exports, tmp_path, "bbbbbbbbbb", "2999-01-01T00:00:00+00:00")
    manifest = orjson.loads((newer / MANIFEST).read_bytes())
    stores._upload(newer, s3_root, newer.name, manifest)  # step 1 done, then the crash
    assert objects.list_keys(s3_root, newer.name)  # its data files are there ...
    assert stores.store_releases(s3_root) == [old]  # ... but it is no release
    assert api.verify(data_root=demo_warehouse, store=s3_root.uri).version == old
    with pytest.raises(api.ReleaseMismatch, match="incomplete release"):
        api.verify(newer.name, data_root=demo_warehouse, store=s3_root.uri)
    done = stores.publish_release(newer, s3_root)  # publishing again completes it
    assert done.created and done.latest
    assert stores.store_latest(s3_root) == newer.name


def test_a_publisher_whose_latest_was_moved_meanwhile_loses_cleanly(
    exports, demo_warehouse, s3_root, tmp_path
):
    old = latest_release(exports)
    api.pull(old, s3_root.uri, data_root=demo_warehouse)
    slow = _later_copy(exports, tmp_path, "bbbbbbbbbb", "2999-01-01T00:00:00+00:00")
    fast = _later_copy(exports, tmp_path, "cccccccccc", "2999-01-02T00:00:00+00:00")
    read_by_slow = objects.get_bytes(s3_root, "LATEST")
    stores._upload(slow, s3_root, slow.name, orjson.loads((slow / MANIFEST).read_bytes()))
    assert stores._commit_manifest(slow, s3_root, slow.name)
    assert stores.publish_release(fast, s3_root).latest  # the other publisher, start to end
    with pytest.raises(stores.PublishConflict, match=f"moved LATEST to {fast.name}"):
        stores.move_latest(s3_root, slow.name, read_by_slow)
    assert stores.store_releases(s3_root) == [old, slow.name, fast.name]
    assert stores.store_latest(s3_root) == fast.name
    for version in (old, slow.name, fast.name):
        assert stores.verify_stored(s3_root, version) == []
    assert not stores.publish_release(slow, s3_root).latest  # older: LATEST stays forward


def test_two_concurrent_publishers_lose_nothing(exports, demo_warehouse, s3_root, tmp_path):
    old = latest_release(exports)
    api.pull(old, s3_root.uri, data_root=demo_warehouse)
    releases = [
        _later_copy(exports, tmp_path, "bbbbbbbbbb", "2999-01-01T00:00:00+00:00"),
        _later_copy(exports, tmp_path, "cccccccccc", "2999-01-02T00:00:00+00:00"),
    ]
    barrier = threading.Barrier(2)
    outcomes: dict[str, object] = {}

    def publish(folder: Path) -> None:
        barrier.wait()
        try:
            outcomes[folder.name] = stores.publish_release(folder, s3_root)
        except stores.PublishConflict as conflict:
            outcomes[folder.name] = conflict

    threads = [threading.Thread(target=publish, args=(folder,)) for folder in releases]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    names = [folder.name for folder in releases]
    assert stores.store_releases(s3_root) == [old, *names]
    for version in [old, *names]:
        assert stores.verify_stored(s3_root, version) == []
    conflicts = [v for v, outcome in outcomes.items() if isinstance(outcome, Exception)]
    assert len(outcomes) == 2 and len(conflicts) <= 1
    latest = stores.store_latest(s3_root)
    assert latest in names
    if not conflicts:
        assert latest == names[-1]  # both moved it, forward only: the newer one


def test_release_publishes_to_the_configured_store(demo_warehouse, s3_root, tmp_path, monkeypatch):
    data_root = tmp_path / "data"
    shutil.copytree(demo_warehouse, data_root, symlinks=True)
    config = (
        Path("turnlake.toml")
        .read_text()
        .replace(
            "sft_include_negative = false\n",
            f'sft_include_negative = false\nstore = "{s3_root.uri}"\n',
            1,
        )
    )
    (tmp_path / "turnlake.toml").write_text(config)
    monkeypatch.setenv("TURNLAKE_CONFIG", str(tmp_path / "turnlake.toml"))
    state = api.release(data_root=data_root)
    assert state.published == f"{s3_root.uri}/{state.version}"
    assert api.releases(data_root=data_root)["version"].to_list() == [state.version]  # the store
    assert api.verify(data_root=data_root).path == state.published
    assert stores.verify_stored(s3_root, state.version) == []


@pytest.mark.parametrize(
    "args",
    [
        ["pull", "latest", "--to", "gs://bucket/x"],
        ["releases", "--store", "ftp://host/x"],
    ],
)
def test_a_store_that_is_not_a_folder_or_s3_is_bad_usage(args, demo_warehouse, capsys):
    assert main([*args, "--data-root", str(demo_warehouse)]) == 2
    assert "use a local folder or s3://bucket/prefix" in capsys.readouterr().err


def test_a_release_store_setting_that_is_not_a_root_is_refused(tmp_path, monkeypatch, capsys):
    (tmp_path / "turnlake.toml").write_text('[release]\nstore = "gs://bucket/x"\n')
    monkeypatch.setenv("TURNLAKE_CONFIG", str(tmp_path / "turnlake.toml"))
    assert main(["releases", "--data-root", str(tmp_path / "data")]) == 2
    err = capsys.readouterr().err
    assert "[release] store: gs://bucket/x: unsupported root" in err


@pytest.mark.parametrize("command", ["releases", "verify", "pull"])
def test_a_missing_bucket_is_a_clear_error(command, aws_env, demo_warehouse, tmp_path, capsys):
    store_args = ["--store", "s3://no-such-bucket/x"]
    args = {
        "releases": ["releases", *store_args],
        "verify": ["verify", *store_args],
        "pull": ["pull", "latest", "--to", "s3://no-such-bucket/x"],
    }[command]
    assert main([*args, "--data-root", str(demo_warehouse)]) == 1
    err = capsys.readouterr().err
    assert f"turnlake {command}: s3://no-such-bucket/x" in err
    assert "NoSuchBucket: The specified bucket does not exist" in err


def test_a_file_the_latest_release_holds_is_copied_in_the_store_not_sent_again(
    exports, demo_warehouse, s3_root, tmp_path, moto_requests
):
    """Publishing a release whose data files the store's LATEST already holds sends none of
    their bytes: each is a server-side copy (CopyObject), checked by its e-tag, not read back;
    a changed file (the card here) is uploaded whole."""
    first = api.pull("latest", s3_root.uri, data_root=demo_warehouse).version
    newer = _later_copy(exports, tmp_path, "cccccccccc", "2999-01-01T00:00:00+00:00")
    card = newer / CARD
    card.write_bytes(card.read_bytes() + b"\nA changed card.\n")
    manifest = orjson.loads((newer / MANIFEST).read_bytes())
    for entry in manifest["files"]:
        if entry["path"] == CARD:
            entry |= {"sha256": sha256_file(card), "bytes": card.stat().st_size}
    (newer / MANIFEST).write_bytes(orjson.dumps(manifest))
    unchanged = sorted(e["path"] for e in manifest["files"] if e["path"] != CARD)
    assert len(unchanged) > 5

    with moto_requests() as log:
        published = stores.publish_release(newer, s3_root)

    assert published.created and published.latest
    prefix = f"/{s3_root.uri.removeprefix('s3://')}/{newer.name}/"
    puts = [r for r in log if r.method == "PUT" and r.path.startswith(prefix)]
    sent = {r.path.removeprefix(prefix): r for r in puts}
    assert len(sent) == len(puts)  # one request per object
    assert set(sent) == {p.relative_to(newer).as_posix() for p in newer.rglob("*") if p.is_file()}
    assert {rel: (sent[rel].body_bytes, sent[rel].copy_source) for rel in unchanged} == {
        rel: (0, f"{s3_root.uri.removeprefix('s3://')}/{first}/{rel}") for rel in unchanged
    }
    assert sent[CARD].body_bytes == card.stat().st_size and sent[CARD].copy_source is None
    read_back = [r.path.removeprefix(prefix) for r in log if r.method == "GET"]
    assert [rel for rel in read_back if rel in sent and rel != MANIFEST] == [CARD]  # re-hashed
    for rel in unchanged:
        assert objects.e_tag(s3_root, f"{newer.name}/{rel}") == objects.e_tag(
            s3_root, f"{first}/{rel}"
        )
    assert stores.verify_stored(s3_root, newer.name) == []


def test_a_copied_file_that_changed_in_the_store_is_caught_before_the_manifest(
    exports, demo_warehouse, s3_root, tmp_path
):
    first = api.pull("latest", s3_root.uri, data_root=demo_warehouse).version
    newer = _later_copy(exports, tmp_path, "dddddddddd", "2999-01-01T00:00:00+00:00")
    target = next(f["path"] for f in read_manifest(newer)["files"] if f["path"].startswith("sft/"))
    objects.put_bytes(s3_root, f"{first}/{target}", b"not the released bytes")
    with pytest.raises(ValueError, match=f"{target}: sha256 of the stored copy differs"):
        stores.publish_release(newer, s3_root)
    assert not objects.exists(s3_root, f"{newer.name}/{MANIFEST}")
    assert objects.get_bytes(s3_root, "LATEST") == f"{first}\n".encode()
