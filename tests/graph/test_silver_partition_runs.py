"""Silver partitions as Dagster partition runs: a `silver_partition` run commits its stale
partition (rows, pieces, record) without publishing, and `gold_partition` of the same key in the
same run computes its gold from that commit; the build job then publishes both without
transforming or computing them again, and the release equals a plain build's from scratch. A run
stopped between its rows and its record leaves the partition pending: stale, and refused by a
publish until it is redone. A run reads its slice of the plan the planner committed, and plans
again only when that plan is not bronze's any more; `forget` refuses while partitions are
pending, and runs commit nothing while a forget erases."""

from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from pipelines.cli.main import main
from pipelines.config.settings import settings_from_config
from pipelines.definitions import BUILD_JOB, PARTITION_JOB, build_definitions
from pipelines.gold.params import load_params
from pipelines.gold.partitions import mark_pending as mark_gold_pending
from pipelines.gold.partitions import refresh_partition as refresh_gold_partition
from pipelines.ingest.log import read_log, write_log
from pipelines.orchestration.partitions import (
    GOLD_PARTITION,
    SILVER_PARTITION,
    TURNLAKE_PARTITIONS,
    plan,
)
from pipelines.orchestration.resources import TurnlakeResource
from pipelines.partitions.store import DIGESTS_TABLE, INPUTS, committed_silver_record, in_flight
from pipelines.privacy.forget import forgetting
from pipelines.storage import delta_cache
from pipelines.storage import tables as stored
from pipelines.storage.delta_writes import file_paths
from pipelines.storage.layout import Layout
from pipelines.transforms import assemble, partition_run
from pipelines.transforms.partition_run import (
    FORGETTING,
    TRANSFORMED,
    UP_TO_DATE,
    refresh_partition,
    wanted_runs,
)
from pipelines.transforms.plan import plan_silver
from tests.graph._earlier_layout import store_whole
from tests.graph._world import build_world
from tests.graph.test_partitions_graph import (
    KEY,
    _add_new_files,
    _content_hash,
    _tables,
    demo_built,
    grown_demo_built,
)


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    yield from build_world(tmp_path_factory, "silver-runs", KEY)


def _bronze_only(raw: Path, data: Path, instance: dg.DagsterInstance):
    """A built demo data root with new files ingested to bronze only: silver is stale for the
    new batch's partition and the old partition a late feedback event rates."""
    settings = settings_from_config(raw, data, data.parent / "turnlake-data.toml")
    defs = build_definitions(settings)
    bronze = [k for k in defs.resolve_all_asset_keys() if k.path[0].startswith("bronze")]
    build = defs.resolve_job_def(BUILD_JOB)
    assert build.execute_in_process(instance=instance, asset_selection=bronze).success
    return settings, defs


def _files_of(data: Path, layer: str, table: str, partition: str) -> set[str]:
    """The files of `partition` in the table's newest version (published or not)."""
    delta = delta_cache.existing(stored.table_uri(Layout(data), layer, table), None)
    return {f for f in file_paths(delta) if f"_partition={partition}/" in f}


def _late_partition(data: Path) -> str:
    """The old partition of the conversation the late feedback event rates (published silver)."""
    episodes = stored.read(Layout(data), "silver", "episodes", with_partition=True)
    late = episodes.filter(pl.col("native_id") == "tutoring/tut-1000")
    return late.get_column("_partition").item()


def test_a_partition_run_is_published_by_the_build_without_being_transformed_again(env, built_once):
    raw, data = demo_built(built_once, 4, to=env / "runs")
    _add_new_files(raw)
    instance = dg.DagsterInstance.ephemeral()
    settings, defs = _bronze_only(raw, data, instance)
    published = stored.snapshot(Layout(data), "silver")
    late = _late_partition(data)
    wanted, reason = wanted_runs(settings)
    assert reason is None and late in wanted
    # the new batch's partition(s) (its two conversations) and the late event's old one
    assert {key[:6] for key in wanted} == {"b00000", "b00001"} and late.startswith("b00000")
    stale = len(wanted)
    # the planner asks for one run per stale partition: its silver, then its gold
    planned = plan(TurnlakeResource.from_settings(settings), known=set())
    assert sorted(r.partition_key for r in planned.run_requests) == sorted(wanted)
    both = [SILVER_PARTITION, GOLD_PARTITION]
    assert all(r.asset_selection == both for r in planned.run_requests)

    instance.add_dynamic_partitions(TURNLAKE_PARTITIONS.name, sorted(wanted))
    job = defs.resolve_job_def(PARTITION_JOB)
    run = job.execute_in_process(instance=instance, partition_key=late, asset_selection=both)
    assert run.success
    done = instance.get_latest_materialization_event(SILVER_PARTITION)
    assert done.asset_materialization.metadata["outcome"].value == TRANSFORMED
    # gold of the key, from its silver as committed (silver is not published yet)
    gold = instance.get_latest_materialization_event(GOLD_PARTITION)
    assert gold.asset_materialization.metadata["rebuilt"].value is True
    gold_files = _files_of(data, "gold", "turn_rewards", late)
    assert gold_files
    # committed, not published: readers still see the snapshot before the run
    assert stored.snapshot(Layout(data), "silver") == published
    record = committed_silver_record(Layout(data))
    assert record.filter(pl.col("_partition") == late)[INPUTS].item() == wanted[late]
    assert set(wanted_runs(settings)[0]) == set(wanted) - {late}

    build = defs.resolve_job_def(BUILD_JOB)
    assert build.execute_in_process(instance=instance).success
    step = instance.get_latest_materialization_event(dg.AssetKey("silver_episodes"))
    assert step.asset_materialization.metadata["partitions_transformed"].value == stale - 1
    # gold_tables published the run's gold files of the key instead of computing them again
    published_gold = stored.files(Layout(data), "gold", "turn_rewards")
    assert {f for f in published_gold if f"_partition={late}/" in f} == gold_files

    scratch = grown_demo_built(built_once, 4)
    built, fresh = _tables(data), _tables(scratch)
    for name, frame in built.items():
        assert frame.equals(fresh[name]), name
    assert _content_hash(data) == _content_hash(scratch)


def test_a_run_stopped_between_its_rows_and_its_record_leaves_the_partition_pending(
    env, built_once, monkeypatch
):
    raw, data = demo_built(built_once, 4, to=env / "crash")
    _add_new_files(raw)
    settings, _ = _bronze_only(raw, data, dg.DagsterInstance.ephemeral())
    late = _late_partition(data)
    wanted, _ = wanted_runs(settings)
    layout = Layout(data)
    published = stored.snapshot(layout, "silver")

    def stop(name: str) -> None:
        if name == "silver:before_record":
            raise KeyboardInterrupt(name)  # the process stops here: nothing after runs

    monkeypatch.setattr(assemble, "crash_point", stop)
    with pytest.raises(KeyboardInterrupt):
        refresh_partition(settings, late)
    monkeypatch.undo()

    record = committed_silver_record(layout)
    pending = record.filter(pl.col("_partition") == late)
    assert pending[INPUTS].to_list() == [None] and pending["digest"].to_list() == [None]
    # its rows were committed beyond the snapshot, yet only the stale partitions are planned,
    # not every partition as for a build that crashed before this
    again = plan_silver(settings)
    assert not again.whole and set(again.stale) == set(wanted)
    assert stored.snapshot(layout, "silver") == published
    with pytest.raises(assemble.PartitionRunInFlight, match=late):
        assemble._newest_versions(layout)  # a build publishing now would publish its rows

    assert refresh_partition(settings, late) == TRANSFORMED
    record = committed_silver_record(layout)
    assert record.filter(pl.col("_partition") == late)[INPUTS].item() == wanted[late]
    assert record.filter(pl.col(INPUTS).is_null()).is_empty()
    assert stored.exists(layout, "silver", DIGESTS_TABLE)


def test_silver_stored_whole_by_an_earlier_version_is_transformed_whole(env, built_once):
    """Tables an earlier version stored whole, beside a record left in partitions that its
    snapshot does not name: the plan makes silver whole, every partition stale even where the
    record's inputs match (some partitions of a table stored whole cannot be replaced)."""
    raw, data = demo_built(built_once, 4, to=env / "earlier")
    settings = settings_from_config(raw, data, data.parent / "turnlake-data.toml")
    assert plan_silver(settings).stale == []  # built: nothing stale
    store_whole(data)
    planned = plan_silver(settings)
    assert planned.whole
    assert planned.stale == sorted(planned.digests.get_column("_partition").to_list())
    assert len(planned.stale) == 4  # four shards of one batch


def _planning_counted(monkeypatch) -> list[int]:
    """Count the run's own plans from bronze (plan_silver called by partition_run)."""
    calls: list[int] = []
    real = partition_run.plan_silver

    def counted(settings):
        calls.append(1)
        return real(settings)

    monkeypatch.setattr(partition_run, "plan_silver", counted)
    return calls


def test_a_run_reads_the_committed_plan_and_plans_again_only_when_bronze_moved(
    env, built_once, monkeypatch
):
    raw, data = demo_built(built_once, 4, to=env / "plan-once")
    _add_new_files(raw)
    settings, _ = _bronze_only(raw, data, dg.DagsterInstance.ephemeral())
    layout = Layout(data)
    late = _late_partition(data)
    wanted, _ = wanted_runs(settings)  # the planner commits the plan
    assert layout.partition_plan.exists()
    first, second = sorted(wanted)[:2]
    calls = _planning_counted(monkeypatch)
    assert refresh_partition(settings, first) == TRANSFORMED
    assert calls == []  # its slice of the committed plan, no plan of its own
    assert refresh_partition(settings, first) == UP_TO_DATE  # the record says so now
    assert calls == []
    # an ingest commits a new log version: the plan may no longer be bronze's, so plan again
    write_log(layout, "dialogue", read_log(layout, "dialogue"))
    assert refresh_partition(settings, second) == TRANSFORMED
    assert calls == [1]
    record = committed_silver_record(layout)
    done = record.filter(pl.col("_partition").is_in([first, second]))
    assert dict(done.select("_partition", INPUTS).iter_rows()) == {
        first: wanted[first],
        second: wanted[second],
    }
    assert late in wanted


def test_forget_refuses_while_partitions_are_pending_and_works_after_the_build(
    env, built_once, monkeypatch, capsys
):
    raw, data = demo_built(built_once, 4, to=env / "forget-pending")
    _add_new_files(raw)
    settings, _ = _bronze_only(raw, data, dg.DagsterInstance.ephemeral())
    layout = Layout(data)
    late = _late_partition(data)
    wanted_runs(settings)

    def stop(name: str) -> None:
        if name == "silver:before_record":
            raise KeyboardInterrupt(name)

    monkeypatch.setattr(assemble, "crash_point", stop)
    with pytest.raises(KeyboardInterrupt):
        refresh_partition(settings, late)
    monkeypatch.undo()
    other = min(set(committed_silver_record(layout)["_partition"]) - {late})
    mark_gold_pending(layout, other)  # a gold run between its mark and its record

    def files() -> dict[str, tuple[int, int]]:
        found = {}
        for root in (raw, data):
            for p in root.rglob("*"):
                if p.is_file() and p != layout.lock_file:
                    found[str(p)] = (p.stat().st_size, p.stat().st_mtime_ns)
        return found

    before = files()
    episodes = stored.read(layout, "silver", "episodes")
    participant = episodes.filter(pl.col("source") == "study")["group_id"].sort()[0]
    roots = ["--raw-root", str(raw), "--data-root", str(data)]
    monkeypatch.setenv("TURNLAKE_CONFIG", str(data.parent / "turnlake-data.toml"))
    assert main(["forget", "participant", participant, *roots]) == 3
    err = capsys.readouterr().err
    assert f"silver {late}" in err and f"gold {other}" in err
    assert files() == before  # nothing recorded, rebuilt, erased or removed

    assert main(["build", *roots, "--log-level", "ERROR"]) == 0  # redoes both partitions
    assert main(["forget", "participant", participant, *roots]) == 0
    assert not layout.forgetting.exists()
    episodes = stored.read(layout, "silver", "episodes")
    assert episodes.filter(pl.col("group_id") == participant).is_empty()


def test_partition_runs_commit_nothing_while_a_forget_erases(env, built_once):
    raw, data = demo_built(built_once, 4, to=env / "forgetting")
    _add_new_files(raw)
    settings, _ = _bronze_only(raw, data, dg.DagsterInstance.ephemeral())
    layout = Layout(data)
    key = min(wanted_runs(settings)[0])
    record = stored.table_uri(layout, "silver", DIGESTS_TABLE)
    gold_record = stored.table_uri(layout, "gold", DIGESTS_TABLE)
    versions = [delta_cache.existing(u, None).version() for u in (record, gold_record)]
    with forgetting(layout):
        assert refresh_partition(settings, key) == FORGETTING
        assert refresh_gold_partition(layout, load_params(), key) is False
    assert [delta_cache.existing(u, None).version() for u in (record, gold_record)] == versions
    assert not layout.forgetting.exists()
    assert refresh_partition(settings, key) == TRANSFORMED


def _forget_begins_at(mark, layout: Layout):
    """`mark` (a pending mark) with a forget's marker written just before it."""

    def marked(*args):
        layout.forgetting.write_text("a forget began")
        mark(*args)

    return marked


def _files_but(root: Path, *left_out: Path) -> dict[str, int]:
    return {
        str(p): p.stat().st_mtime_ns
        for p in root.rglob("*")
        if p.is_file() and not any(p == o or o in p.parents for o in left_out)
    }


def test_a_forget_that_begins_between_a_silver_runs_look_and_its_mark_gets_no_rows(
    env, built_once, monkeypatch
):
    """The marker appears after a run's first look, before its pending mark (a run stalled
    there): the run looks again after its mark and writes no row, and its mark stays for the
    forget to see."""
    raw, data = demo_built(built_once, 4, to=env / "forget-race")
    _add_new_files(raw)
    settings, _ = _bronze_only(raw, data, dg.DagsterInstance.ephemeral())
    layout = Layout(data)
    key = min(wanted_runs(settings)[0])
    record = Path(stored.table_uri(layout, "silver", DIGESTS_TABLE))
    version = delta_cache.existing(str(record), None).version()
    before = _files_but(data, record, layout.lock_file)
    monkeypatch.setattr(
        partition_run, "mark_pending", _forget_begins_at(partition_run.mark_pending, layout)
    )
    assert refresh_partition(settings, key) == FORGETTING
    assert delta_cache.existing(str(record), None).version() == version + 1  # its mark only
    layout.forgetting.unlink()
    assert _files_but(data, record, layout.lock_file) == before  # no row file, no piece
    assert in_flight(layout) == [f"silver {key}"]


def test_a_forget_that_begins_between_a_gold_runs_look_and_its_mark_gets_no_rows(
    env, built_once, monkeypatch
):
    from pipelines.gold import partitions as gold_partitions

    _, data = demo_built(built_once, 4, to=env / "forget-race-gold")
    layout = Layout(data)
    key = min(committed_silver_record(layout)["_partition"])
    mark_gold_pending(layout, key)  # stale in gold's record, as a killed run leaves it
    record = stored.table_uri(layout, "gold", DIGESTS_TABLE)
    version = delta_cache.existing(record, None).version()
    monkeypatch.setattr(
        gold_partitions, "mark_pending", _forget_begins_at(gold_partitions.mark_pending, layout)
    )
    assert refresh_gold_partition(layout, load_params(), key) is False
    assert delta_cache.existing(record, None).version() == version + 1  # its mark, no record
    assert in_flight(layout) == [f"gold {key}"]  # what the forget's check after its rebuild sees
