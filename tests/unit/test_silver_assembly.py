"""Silver is made one group of partitions at a time, straight from bronze (pipelines/transforms/
assemble.py): many groups give what one group of every partition gives, on clean and dirty fixtures
and with an opt-out; a tiny row budget gives the same tables and release as one group; a small
change transforms only the partitions whose inputs it changed, and ends with the tables of a build
from scratch; a group reads only the sources it holds units of, and hands each partition its own
rows."""

import shutil
from dataclasses import replace
from pathlib import Path

import orjson
import polars as pl
import pytest

import turnlake
from pipelines.config.names import SOURCES
from pipelines.config.settings import settings_from_config
from pipelines.ingest.incremental import ingest_source
from pipelines.partitions.store import MAP_TABLE
from pipelines.release.store.files import read_manifest
from pipelines.schemas.silver import SILVER_MODELS
from pipelines.sources.base import dumps
from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout
from pipelines.transforms import assemble
from pipelines.transforms.build import WITHHELD, load_bronze
from pipelines.transforms.plan import Plan, SourceUnits
from pipelines.transforms.refresh import refresh_silver
from tests.conformance.harness import run_pipeline
from tests.graph.test_partitions_graph import KEY, demo_built, grown_demo_built
from tests.graph.test_partitions_graph import _add_new_files as add_new_files
from tests.graph.test_release_partitions import _latest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SHARDED = "[partitions]\nshards = 4\n"
# the settings `demo_built` builds the demo with
DEMO_SHARDED = "[partitions]\nshards = 4\nepisodes_per_partition = 5000\n"


def _multiset(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.sort(frame.columns, nulls_last=True)


def _ingest(raw: Path, data: Path, config: str = SHARDED):
    data.mkdir(parents=True, exist_ok=True)
    (data / "turnlake.toml").write_text(config)
    settings = settings_from_config(raw, data, data / "turnlake.toml")
    for source in SOURCES:
        ingest_source(source, settings, "ingest")
    return settings


def _record_groups(monkeypatch) -> list[list[str]]:
    groups: list[list[str]] = []
    real = assemble._group_rows

    def recording(plan, group):
        groups.append(list(group))
        return real(plan, group)

    monkeypatch.setattr(assemble, "_group_rows", recording)
    return groups


def _opt_out_first_participant(raw: Path, settings) -> None:
    layout = Layout(settings.data_root)
    episodes = stored.read(layout, "silver", "episodes")  # of a first assembly, opt-out aside
    study = episodes.filter(pl.col("source") == "study")
    participant = study.get_column("group_id").sort()[0]
    (raw / "consent").mkdir()
    (raw / "consent" / "optouts.jsonl").write_text(
        orjson.dumps({"subject_kind": "participant", "subject_id": participant}).decode() + "\n"
    )


def _silver(data: Path) -> dict[str, pl.DataFrame]:
    return {t: _multiset(stored.read(Layout(data), "silver", t)) for t in SILVER_MODELS}


@pytest.mark.parametrize("kind", ["clean", "dirty", "clean-optout"])
def test_assembly_in_many_groups_equals_the_assembly_in_one(tmp_path, monkeypatch, kind):
    raw = tmp_path / "raw"
    shutil.copytree(FIXTURES / kind.removesuffix("-optout"), raw)
    settings = _ingest(raw, tmp_path / "data")
    if kind.endswith("-optout"):
        refresh_silver(settings, "first")
        _opt_out_first_participant(raw, settings)
    shutil.copytree(tmp_path / "data", tmp_path / "one")
    groups = _record_groups(monkeypatch)
    one = replace(settings, data_root=tmp_path / "one")
    refresh_silver(one, "run")  # the fixtures' rows fit one group
    assert len(groups) == 1
    withheld = orjson.loads(stored.meta(Layout(one.data_root), "silver", WITHHELD))
    assert any(withheld.values()) == kind.endswith("-optout")
    groups.clear()
    monkeypatch.setattr(assemble, "BRONZE_ROWS", 1)  # one partition per group
    refresh_silver(settings, "run")
    assert len(groups) > 3 and all(len(g) == 1 for g in groups)
    many, whole = _silver(settings.data_root), _silver(one.data_root)
    for table in SILVER_MODELS:
        assert many[table].equals(whole[table]), table
    assert stored.meta(Layout(settings.data_root), "silver", WITHHELD) == dumps(withheld)


def _bronze_rows(data: Path) -> int:
    layout = Layout(data)
    scans = [scan for source in SOURCES for scan in load_bronze(source, layout).values()]
    return sum(scan.select(pl.len()).collect().item() for scan in scans)


def _assert_same_silver(data: Path, other: Path) -> None:
    left, right = _silver(data), _silver(other)
    for table in SILVER_MODELS:
        # a quarantine row names the run that read the record: another data root, another run
        got, expected = (f.drop("run_id", strict=False) for f in (left[table], right[table]))
        assert got.equals(expected), table


def test_a_tiny_row_budget_gives_the_tables_and_release_of_one_group(
    tmp_path, monkeypatch, built_once
):
    """The demo built with the default row budget (shared by the partition tests: 4 shards, key
    KEY), which holds all its bronze rows, so one group; then with a budget of 50 rows."""
    raw, one = demo_built(built_once, 4)
    assert 0 < _bronze_rows(one) <= assemble.BRONZE_ROWS  # one group: every partition fits
    monkeypatch.setenv("TURNLAKE_PSEUDONYM_KEY", KEY)
    groups = _record_groups(monkeypatch)
    monkeypatch.setattr(assemble, "BRONZE_ROWS", 50)
    many = run_pipeline(raw, tmp_path / "many", config=DEMO_SHARDED)
    assert len(groups) > 3
    _assert_same_silver(one, many.settings.data_root)
    hashes = [read_manifest(release)["content_hash"] for release in (_latest(one), many.release)]
    assert hashes[0] == hashes[1]


def test_a_late_event_and_new_files_transform_only_their_partitions(
    tmp_path, monkeypatch, built_once
):
    """The late rating of conversation tut-1000 changes only its group's partition; the two new
    conversations land in new partitions (a new batch); no other partition is transformed; silver
    then equals a build from scratch of the same raw files (shared by the partition tests)."""
    monkeypatch.setenv("TURNLAKE_PSEUDONYM_KEY", KEY)  # the key the copied data root was built with
    raw, data = demo_built(built_once, 4, to=tmp_path / "demo")
    layout = Layout(data)
    map_before = stored.read(layout, "silver", MAP_TABLE)
    episodes = stored.read(layout, "silver", "episodes")
    late_group = episodes.filter(pl.col("native_id") == "tutoring/tut-1000")["group_id"].item()
    late_partition = map_before.filter(pl.col("group_id") == late_group)["_partition"].item()
    add_new_files(raw)  # two new conversations and a late rating of tut-1000
    groups = _record_groups(monkeypatch)
    refresh_silver(_ingest(raw, data, DEMO_SHARDED), "run")
    map_after = stored.read(layout, "silver", MAP_TABLE)
    fresh = map_after.join(map_before, on="group_id", how="anti")
    assert fresh.height == 2 and set(fresh["batch"]) == {1}
    expected = {late_partition, *fresh["_partition"]}
    assert {p for g in groups for p in g} == expected
    assert late_partition.startswith("b00000-")  # an old partition, reassembled
    scratch = grown_demo_built(built_once, 4)
    _assert_same_silver(data, scratch)


def test_the_plan_places_every_split_group_and_every_component_in_one_partition(tmp_path):
    """At demo scale 3 raters link conversations and decisions are copied across sessions: every
    unit of one split group, and every unit of one linked component, lives in one partition
    (what lets a partition be transformed from its own units' bronze)."""
    from pipelines.transforms import units as u
    from pipelines.transforms.plan import plan_silver

    raw = tmp_path / "raw"
    turnlake.demo(raw_root=raw, scale=3)
    settings = _ingest(raw, tmp_path / "data")
    plan = plan_silver(settings)
    assert plan.units.get_column("_partition").null_count() == 0
    assert plan.units.get_column("_partition").n_unique() > 1
    spread = []
    for source in SOURCES:
        bronze = load_bronze(source, Layout(settings.data_root))
        mine = plan.units.filter(pl.col("source") == source).select("unit", "_partition")
        groups = u.unit_groups(source, bronze, settings).join(mine, on="unit")
        links = u.source_units(source).unit_links(bronze, settings).collect().join(mine, on="unit")
        for frame, key in ((groups, "group_id"), (links, "link")):
            split = (
                frame.group_by(key)
                .agg(pl.col("_partition").n_unique())
                .filter(pl.col("_partition") > 1)
            )
            spread += [(source, key, k) for k in split.get_column(key).to_list()]
        if source == "dialogue":  # a group of several conversations is what is tested
            assert groups.get_column("group_id").is_duplicated().any()
    assert not spread


def _two_source_plan(unreadable: Path) -> Plan:
    """Source `a`: units u1 (partition p1, file f1) and u2 (p2, f2); source `b`: unit v1 (p3),
    whose bronze is a scan of a file that does not exist: reading it raises."""
    bronze_a = pl.LazyFrame(
        {
            "file": ["f1", "f2", "f1", "f2", "f1"],
            "_unit": ["u1", "u2", "u1", "u2", "u1"],
            "x": [1, 2, 3, 4, 5],
        }
    )
    a = SourceUnits(
        tagged={"t": bronze_a},
        evidence={},
        read_keys={},
        unit_files=pl.DataFrame({"unit": ["u1", "u2"], "file": ["f1", "f2"]}),
    )
    b = SourceUnits(
        tagged={"t": pl.scan_parquet(unreadable)},
        evidence={},
        read_keys={},
        unit_files=pl.DataFrame({"unit": ["v1"], "file": ["g1"]}),
    )
    units = pl.DataFrame(
        {
            "source": ["a", "a", "b"],
            "unit": ["u1", "u2", "v1"],
            "_partition": ["p1", "p2", "p3"],
            "rows": [3, 2, 1],
        }
    )
    empty = pl.DataFrame()
    return Plan({"a": a, "b": b}, empty, units, empty, ["p1", "p2", "p3"], True)


def test_a_group_reads_only_the_sources_it_holds_units_of(tmp_path):
    plan = _two_source_plan(tmp_path / "missing.parquet")
    rows = assemble._group_rows(plan, ["p1", "p2"])  # b's bronze would raise if it were read
    assert set(rows) == {"p1", "p2"}
    assert all(set(by_source) == {"a"} for by_source in rows.values())


def test_each_partition_of_a_group_gets_its_own_rows_in_bronze_order(tmp_path):
    plan = _two_source_plan(tmp_path / "missing.parquet")
    rows = assemble._group_rows(plan, ["p2", "p1"])
    assert rows["p1"]["a"]["t"].to_dict(as_series=False) == {"file": ["f1"] * 3, "x": [1, 3, 5]}
    assert rows["p2"]["a"]["t"].to_dict(as_series=False) == {"file": ["f2"] * 2, "x": [2, 4]}


def test_a_group_reads_its_units_rows_by_their_scan_key_inside_the_parquet_scan(tmp_path):
    """File f1 holds units d1/a (key a), d1/b (key b) and d2/a (key a again, another dataset):
    the scan keeps key a's rows only, the join on `_unit` then d1/a's, in bronze order."""
    path = tmp_path / "t.parquet"
    pl.DataFrame(
        {
            "file": ["f1"] * 5,
            "dataset": ["d1", "d1", "d2", "d1", "d1"],
            "k": ["a", "b", "a", "a", "b"],
            "x": [1, 2, 3, 4, 5],
        }
    ).write_parquet(path)
    unit = pl.concat_str("dataset", pl.lit("/"), "k")
    units = SourceUnits(
        tagged={"t": pl.scan_parquet(path).with_columns(unit.alias("_unit"))},
        evidence={},
        read_keys={},
        unit_files=pl.DataFrame({"unit": ["d1/a", "d1/b", "d2/a"], "file": ["f1"] * 3}),
        scan_values={"t": pl.DataFrame({"unit": ["d1/a", "d1/b", "d2/a"], "k": ["a", "b", "a"]})},
    )
    wanted = pl.DataFrame({"_unit": ["d1/a"], "_partition": ["p1"]})
    scanned = assemble._scanned(units, "t", wanted)
    scan_filter = next(line for line in scanned.explain().splitlines() if "SELECTION" in line)
    assert 'col("k").is_in' in scan_filter
    assert scanned.collect().get_column("x").to_list() == [1, 4]
