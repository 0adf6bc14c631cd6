"""`load_release` from an S3 data root (moto on 127.0.0.1): a verified copy in the root's local
cache, re-downloaded when the stored manifest changed, refused when the copy does not verify."""

from __future__ import annotations

import pytest

import turnlake
from pipelines.release.store.files import latest_release, read_manifest
from pipelines.storage.layout import Layout


@pytest.fixture
def s3_data_root(demo_warehouse, s3_root, tmp_path, monkeypatch) -> str:
    """An S3 data root whose exports hold the demo's latest release (published there)."""
    monkeypatch.setenv("TURNLAKE_CACHE_DIR", str(tmp_path / "cache"))
    turnlake.pull("latest", s3_root.join("exports").uri, data_root=demo_warehouse)
    return s3_root.uri


def test_load_release_from_an_s3_data_root_gives_the_manifests_splits(
    demo_warehouse, s3_data_root, tmp_path
):
    exports = Layout(demo_warehouse).exports
    counts = read_manifest(exports / latest_release(exports))["counts"]
    ds = turnlake.load_release(config="sft", data_root=s3_data_root, cache_dir=tmp_path / "hf")
    assert {split: ds[split].num_rows for split in ds} == counts["sft"]
    copies = list((tmp_path / "cache").rglob("manifest.json"))
    assert len(copies) == 1  # downloaded into the root's local cache, not next to the caller


def test_a_cached_copy_is_replaced_when_its_manifest_differs_and_refused_when_damaged(
    demo_warehouse, s3_data_root, tmp_path
):
    turnlake.load_release(config="sft", data_root=s3_data_root, cache_dir=tmp_path / "hf")
    (manifest,) = (tmp_path / "cache").rglob("manifest.json")
    stored = manifest.read_bytes()
    manifest.write_bytes(stored.replace(b"}", b', "stale": true}', 1))  # as after a forget
    turnlake.load_release(config="sft", data_root=s3_data_root, cache_dir=tmp_path / "hf")
    assert manifest.read_bytes() == stored  # downloaded again
    (train,) = manifest.parent.glob("sft/train*.parquet")
    train.write_bytes(b"not parquet")
    with pytest.raises(turnlake.ReleaseMismatch):
        turnlake.load_release(config="sft", data_root=s3_data_root, cache_dir=tmp_path / "hf")
