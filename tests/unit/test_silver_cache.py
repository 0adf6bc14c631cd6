"""The silver cache (pipelines/transforms/unit_cache.py) gives what one transform of the whole
bronze gives, on the clean and dirty fixtures of every source, before and after a file changes;
a changed file makes only its chunks stale."""

from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest

from pipelines.config.settings import SOURCES
from pipelines.transforms import unit_cache
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


@pytest.mark.parametrize("kind", ["clean", "dirty"])
@pytest.mark.parametrize("source", SOURCES)
def test_cached_silver_equals_the_whole_transform_before_and_after_a_file_goes(
    tmp_path, source, kind
):
    raw = FIXTURES / kind
    settings = replace(fixture_settings(raw), data_root=tmp_path)
    bronze = fixture_bronze(source, raw, settings)
    cached = unit_cache.cached_silver(source, bronze, settings, _file_ids(bronze), "s")
    _assert_same(cached, transform(source, bronze, settings), f"{source}/{kind}")
    files = sorted(_file_ids(bronze).get_column("file"))
    if len(files) < 2:
        return
    fewer = {t: f.filter(pl.col("file") != files[0]) for t, f in bronze.items()}
    cached = unit_cache.cached_silver(source, fewer, settings, _file_ids(fewer), "s")
    _assert_same(cached, transform(source, fewer, settings), f"{source}/{kind} minus {files[0]}")
