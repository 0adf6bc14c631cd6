"""New data that drops rows of an old partition (a prompt it asks in the test split now asked in
train elsewhere) does not privatize that partition again: its privatized rows serve any keep mask
(pipelines/release/build/parts.py), and the incremental release is the one a build from scratch
of the same raw files makes, its redaction ledger too."""

import shutil
from pathlib import Path

import polars as pl
import pytest

from pipelines.partitions.store import MAP_TABLE
from pipelines.release.store.files import read_manifest
from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout
from tests.graph._world import build_world
from tests.graph.test_partitions_graph import KEY, _build, demo_built
from tests.graph.test_release_partitions import _count_built_and_privatized, _latest

RUN, COPY = "ces_run_000", "ces_run_0-copy"  # the copy's name sorts before every run's
EXPERIMENT = "ces_exp_305"  # ces_run_000's experiment (its split group)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    yield from build_world(tmp_path_factory, "private-reuse", KEY)


def _copy_run(raw: Path) -> None:
    """ces_run_000's rounds again, as a run of a new experiment: the same agents say the same
    words, so its sft rows repeat ces_run_000's exactly, in a new split group."""
    target = raw / "outputs" / COPY
    shutil.copytree(raw / "outputs" / RUN, target)
    for path in target.iterdir():
        text = path.read_text().replace(f'"{EXPERIMENT}"', f'"{EXPERIMENT}-copy"')
        path.write_text(text)


def _episodes_in(release: Path, run: str) -> list[str]:
    """The split of each sft row of a Social RL run's episodes in a release."""
    sft = pl.read_parquet(sorted((release / "sft").glob("*.parquet")))
    mine = sft.filter(pl.col("episode_id").str.starts_with(f"social_rl:{run}/"))
    return sorted(mine.get_column("split").to_list())


def test_rows_new_data_drops_reuse_the_old_partitions_privatized_rows(
    world, built_once, monkeypatch
):
    raw, data = demo_built(built_once, 4, to=world / "incremental")
    first = _latest(data)
    assert _episodes_in(first, RUN) and set(_episodes_in(first, RUN)) == {"test"}
    _copy_run(raw)
    built, privatized = _count_built_and_privatized(monkeypatch)
    _build(raw, data, 4)
    second = _latest(data)
    layout = Layout(data)
    placed = stored.read(layout, "silver", MAP_TABLE)
    splits = dict(stored.read(layout, "gold", "splits").select("group_id", "split").iter_rows())
    group = f"experiment:{EXPERIMENT}"
    # by hand: the copy is a new group of the new batch, in train; ces_run_000's group is in test,
    # in batch 0, so its sft rows leave the test split (a prompt is kept in its earliest split)
    assert splits[f"{group}-copy"] == "train" and splits[group] == "test"
    old = placed.filter(pl.col("group_id") == group).get_column("_partition").item()
    new = sorted(set(placed.filter(pl.col("batch") == 1).get_column("_partition")))
    assert new and old not in new
    assert _episodes_in(second, RUN) == []
    assert set(_episodes_in(second, COPY)) == {"train"}
    # only the new batch's partitions are built and privatized: ces_run_000's partition lost rows
    # and kept its privatized entry
    assert sorted(built) == new and sorted(privatized) == new

    scratch = world / "scratch"
    shutil.copytree(raw, scratch / "raw")
    _build(scratch / "raw", scratch / "data", 4)
    fresh = _latest(scratch / "data")
    assert read_manifest(second)["content_hash"] == read_manifest(fresh)["content_hash"]
    ledger = "redaction_ledger.json"
    assert (second / ledger).read_bytes() == (fresh / ledger).read_bytes()
