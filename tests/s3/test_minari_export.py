"""`turnlake export minari` from an S3 data root (moto on 127.0.0.1): the release read from a
verified copy in the root's local cache, the Minari datasets written to the local folder of that
root (Minari reads local files only), loadable with `minari.load_dataset`."""

from __future__ import annotations

import polars as pl
import pytest

import turnlake
from pipelines.release.store.files import latest_release
from pipelines.storage.layout import Layout

minari = pytest.importorskip("minari")


def test_export_from_an_s3_data_root_lands_in_its_local_folder(
    demo_warehouse, s3_root, tmp_path, monkeypatch
):
    monkeypatch.setenv("TURNLAKE_CACHE_DIR", str(tmp_path / "cache"))
    turnlake.pull("latest", s3_root.join("exports").uri, data_root=demo_warehouse)
    done = turnlake.export_minari(data_root=s3_root.uri)
    exports = Layout(demo_warehouse).exports
    version = latest_release(exports)
    assert done.version == version
    assert done.path.is_relative_to(tmp_path / "cache")  # this machine's folder of the root
    rows = pl.read_parquet(exports / version / "rl_steps" / "*.parquet").filter(
        (pl.col("source") == "study") & (pl.col("split") == "train")
    )
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(done.path))
    study = minari.load_dataset("turnlake/study/train-v0")
    assert (study.total_episodes, study.total_steps) == (rows["episode_id"].n_unique(), rows.height)
    with pytest.raises(turnlake.BadRoot, match="Minari reads local files only"):
        turnlake.export_minari(data_root=s3_root.uri, to=s3_root.join("minari").uri)
