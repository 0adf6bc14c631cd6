"""The silver cache (pipelines/transforms/unit_cache.py) gives what one transform of the whole
bronze gives, on the clean and dirty fixtures of every source, before and after a file changes;
a changed file makes only its chunks stale."""

from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest

import turnlake
from pipelines.config.names import SOURCES
from pipelines.storage.layout import Layout
from pipelines.transforms import chunks, unit_cache
from pipelines.transforms.units import transform
from tests.unit._locality import DEDUPED_ON, fixture_bronze, fixture_settings

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _sorted(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.sort(frame.columns, nulls_last=True)


def _file_ids(bronze: dict[str, pl.LazyFrame], version: str = "1") -> pl.DataFrame:
    files = pl.concat([f.select("file") for f in bronze.values()]).unique().collect()
    return files.with_columns(file_id=pl.col("file") + "@" + version)


def _assert_same(cached: dict[str, pl.LazyFrame], whole: dict[str, pl.DataFrame], label: str):
    for table, frame in whole.items():
        got = cached[table].collect() if table in cached else frame.clear()
        if table in DEDUPED_ON:
            got = got.unique(DEDUPED_ON[table], keep="first")
        assert _sorted(got).equals(_sorted(frame)), f"{label}: {table}"


@pytest.fixture(scope="module")
def raw_roots(tmp_path_factory) -> dict[str, Path]:
    demo = tmp_path_factory.mktemp("demo-raw")
    turnlake.demo(raw_root=demo)
    return {"clean": FIXTURES / "clean", "dirty": FIXTURES / "dirty", "demo": demo}


@pytest.mark.parametrize("kind", ["clean", "dirty", "demo"])
@pytest.mark.parametrize("source", SOURCES)
def test_cached_silver_equals_the_whole_transform_before_and_after_a_file_goes(
    tmp_path, monkeypatch, raw_roots, source, kind
):
    monkeypatch.setattr(chunks, "COMPONENTS_PER_BUCKET", 1)  # many chunks even on a fixture
    raw = raw_roots[kind]
    settings = replace(fixture_settings(raw), data_root=tmp_path)
    bronze = fixture_bronze(source, raw, settings)
    cached = unit_cache.cached_silver(source, bronze, settings, _file_ids(bronze), "s")
    _assert_same(cached, transform(source, bronze, settings), f"{source}/{kind}")
    if kind == "demo":  # many components: the union over many chunks is what is tested
        used = pl.read_delta(unit_cache._uri(Layout(tmp_path), source, unit_cache.DIGESTS))
        assert used.height > 1, f"{source}: a single chunk"
    files = sorted(_file_ids(bronze).get_column("file"))
    if len(files) < 2:
        return
    fewer = {t: f.filter(pl.col("file") != files[0]) for t, f in bronze.items()}
    cached = unit_cache.cached_silver(source, fewer, settings, _file_ids(fewer), "s")
    _assert_same(cached, transform(source, fewer, settings), f"{source}/{kind} minus {files[0]}")


@pytest.mark.parametrize("source", ["dialogue", "study", "scenario"])
def test_cached_silver_in_groups_of_one_chunk_equals_the_whole_transform(
    tmp_path, monkeypatch, raw_roots, source
):
    """Stale chunks are transformed and committed in row-bounded groups (here one chunk each):
    the cache still gives the whole transform, before and after most files (and chunks) go."""
    monkeypatch.setattr(chunks, "COMPONENTS_PER_BUCKET", 1)
    monkeypatch.setattr(unit_cache, "BRONZE_ROWS", 1)
    committed = []
    real_commit = unit_cache._commit_group
    monkeypatch.setattr(
        unit_cache,
        "_commit_group",
        lambda layout, src, produced, replace: (
            committed.append(replace),
            real_commit(layout, src, produced, replace),
        ),
    )
    settings = replace(fixture_settings(raw_roots["demo"]), data_root=tmp_path)
    bronze = fixture_bronze(source, raw_roots["demo"], settings)
    cached = unit_cache.cached_silver(source, bronze, settings, _file_ids(bronze), "s")
    _assert_same(cached, transform(source, bronze, settings), f"{source}/groups")
    used = pl.read_delta(unit_cache._uri(Layout(tmp_path), source, unit_cache.DIGESTS))
    assert len(committed) == used.height > 1, "one commit per chunk"
    files = sorted(_file_ids(bronze).get_column("file"))
    fewer = {t: f.filter(pl.col("file") == files[-1]) for t, f in bronze.items()}  # chunks go
    cached = unit_cache.cached_silver(source, fewer, settings, _file_ids(fewer), "s")
    _assert_same(cached, transform(source, fewer, settings), f"{source}/groups, only {files[-1]}")
