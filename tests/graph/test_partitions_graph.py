"""Partitioned silver and gold (DESIGN §8): 1 and 8 shards give the same tables and release; new
files land in a new batch's partitions and rewrite only those plus the old partition their late
feedback belongs to; the incremental result equals a build from scratch."""

from pathlib import Path

import dagster as dg
import orjson
import polars as pl
import pytest

import turnlake
from pipelines.cli.main import main
from pipelines.config.settings import settings_from_config
from pipelines.definitions import BUILD_JOB, build_definitions
from pipelines.gold import GOLD_TABLES
from pipelines.orchestration.partitions import PARTITION_JOB, TURNLAKE_PARTITIONS, plan
from pipelines.orchestration.resources import TurnlakeResource
from pipelines.partitions.store import DIGESTS_TABLE, INPUTS, MAP_TABLE, input_digests
from pipelines.release.store.files import latest_release, read_manifest
from pipelines.schemas.silver import SILVER_MODELS
from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout
from tests.graph._earlier_layout import store_whole
from tests.graph._world import build_world

KEY = "0123456789abcdef0123456789abcdef"
NEW_CONVERSATIONS = [
    {
        "conversation_id": f"tut-77{i}",
        "turns": [
            {"role": "student", "content": f"What is {i} squared?"},
            {"role": "tutor", "content": f"{i} squared is {i * i}."},
        ],
    }
    for i in range(2)
]
LATE_FEEDBACK = {
    "conversation_id": "tut-1000",
    "turn_index": 1,
    "rating": 1,
    "created_at": "2024-07-01T10:00:00Z",
}


def _config(data: Path, shards: int | str, per_partition: int = 5_000) -> Path:
    config = data.parent / f"turnlake-{data.name}.toml"
    shards = f'"{shards}"' if isinstance(shards, str) else shards
    config.write_text(
        f"[partitions]\nshards = {shards}\nepisodes_per_partition = {per_partition}\n"
    )
    return config


def _build(raw: Path, data: Path, shards: int | str, per_partition: int = 5_000) -> None:
    args = ["build", "--raw-root", str(raw), "--data-root", str(data), "--log-level", "ERROR"]
    with pytest.MonkeyPatch.context() as env:
        env.setenv("TURNLAKE_CONFIG", str(_config(data, shards, per_partition)))
        assert main(args) == 0


def _build_with_key(folder: Path, shards: int | str, per_partition: int = 5_000) -> None:
    """`folder`/raw built into `folder`/data with pseudonym key KEY and a Dagster home there."""
    (folder / "dagster").mkdir()
    with pytest.MonkeyPatch.context() as env:
        env.setenv("DAGSTER_HOME", str(folder / "dagster"))
        env.setenv("TURNLAKE_PSEUDONYM_KEY", KEY)
        _build(folder / "raw", folder / "data", shards, per_partition)


def demo_built(
    built_once, shards: int | str, to: Path | None = None, per_partition: int = 5_000
) -> tuple[Path, Path]:
    """The demo's raw root and a data root built from it with `shards` (pseudonym key KEY):
    built once per test run and shared read-only, or, with `to`, a copy of both at `to`/raw and
    `to`/data (test_release_partitions.py builds the same demo)."""

    def make(folder: Path) -> None:
        turnlake.demo(raw_root=folder / "raw")
        _build_with_key(folder, shards, per_partition)

    name = f"demo-key-{KEY[:8]}-shards-{shards}-per-{per_partition}"
    folder = built_once.get(name, make) if to is None else built_once.copy(name, make, to)
    if to is not None:
        _config(folder / "data", shards, per_partition)
    return folder / "raw", folder / "data"


def _tables(data: Path) -> dict[str, pl.DataFrame]:
    layout = Layout(data)
    found = {f"silver.{t}": stored.read(layout, "silver", t) for t in SILVER_MODELS}
    found |= {f"gold.{t}": stored.read(layout, "gold", t) for t in GOLD_TABLES}
    # a quarantine row names the run that read it: another data root, another run
    found = {name: f.drop("run_id", strict=False) for name, f in found.items()}
    return {name: f.sort(f.columns, nulls_last=True) for name, f in found.items()}


def _content_hash(data: Path) -> str:
    exports = Layout(data).exports
    return read_manifest(exports / latest_release(exports))["content_hash"]


def _add_new_files(raw: Path) -> None:
    lines = b"".join(orjson.dumps(c) + b"\n" for c in NEW_CONVERSATIONS)
    (raw / "dialogues" / "tutoring" / "batch-077.jsonl").write_bytes(lines)
    (raw / "feedback" / "tutoring" / "events-077.jsonl").write_bytes(
        orjson.dumps(LATE_FEEDBACK) + b"\n"
    )


def grown_demo_built(built_once, shards: int) -> Path:
    """The data root of one build from scratch of the demo grown by `_add_new_files` (pseudonym
    key KEY, `shards`): what the incremental builds of the same files here and in
    test_silver_partition_runs.py must equal. Built once per test run; read-only."""

    def make(folder: Path) -> None:
        turnlake.demo(raw_root=folder / "raw")
        _add_new_files(folder / "raw")
        _build_with_key(folder, shards)

    return built_once.get(f"grown-demo-key-{KEY[:8]}-shards-{shards}", make) / "data"


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A folder for this module's builds, with the environment they run in."""
    yield from build_world(tmp_path_factory, "partitions", KEY)


def test_one_eight_and_sized_shards_give_the_same_tables_and_release(built_once):
    s1, s8 = (demo_built(built_once, shards)[1] for shards in (1, 8))
    sa = demo_built(built_once, "auto", per_partition=40)[1]
    one, eight, sized = _tables(s1), _tables(s8), _tables(sa)
    for name, frame in one.items():
        assert frame.equals(eight[name]), name
        assert frame.equals(sized[name]), name
    assert _content_hash(s1) == _content_hash(s8) == _content_hash(sa)
    maps = [stored.read(Layout(d), "silver", MAP_TABLE) for d in (s1, s8, sa)]
    assert maps[0].get_column("_partition").n_unique() == 1  # one batch, one slice: every split
    assert maps[1].get_column("_partition").n_unique() == 8
    # sized, counted here by hand, group by group: a group of more than 10 episodes (a quarter
    # of 40; none in the demo) gets a slice of its own, by name, after ceil(episodes of the
    # others / 40) bucket slices; the groups that give no episode (orphan events, PRAR runs)
    # share the slice after those
    episodes = stored.read(Layout(sa), "silver", "episodes").group_by("group_id").len()
    big = sorted(episodes.filter(pl.col("len") > 10).get_column("group_id").to_list())
    count = -(-episodes.filter(pl.col("len") <= 10).get_column("len").sum() // 40)
    shard = pl.col("_partition").str.split("-s").list.last().cast(pl.Int64)
    placed = maps[2].select("group_id", shard=shard)
    spread = placed.join(episodes, on="group_id").filter(~pl.col("group_id").is_in(big))
    assert spread.get_column("shard").max() == count - 1  # the last slice is used
    by_name = dict(placed.filter(pl.col("group_id").is_in(big)).iter_rows())
    assert [by_name[g] for g in big] == list(range(count, count + len(big)))
    loose = placed.join(episodes, on="group_id", how="anti").get_column("shard")
    assert set(loose) == {count + len(big)}


@pytest.fixture(scope="module")
def incremental(world, built_once):
    """A build, then new conversations and one late feedback event for an old conversation, and
    a rebuild; also a from-scratch build over the final raw files (shared, read-only)."""
    tmp = world
    raw, data = demo_built(built_once, 4, to=tmp / "incremental")
    layout = Layout(data)
    before = {
        "inputs": input_digests(layout),
        "map": stored.read(layout, "silver", MAP_TABLE),
        "silver": stored.read(layout, "silver", DIGESTS_TABLE, with_partition=True),
        "gold": stored.read(layout, "gold", DIGESTS_TABLE, with_partition=True),
        "episodes": stored.read(layout, "silver", "episodes"),
        "files": set(stored.files(layout, "silver", "turns")),
        "gold_files": set(stored.files(layout, "gold", "turn_rewards")),
    }
    _add_new_files(raw)
    _build(raw, data, 4)
    return data, before, grown_demo_built(built_once, 4)


def _digest_changes(before: pl.DataFrame, after: pl.DataFrame) -> set[str]:
    joined = before.join(after, on="_partition", how="full", coalesce=True, suffix="_after")
    moved = joined.filter(pl.col("digest").ne_missing(pl.col("digest_after")))
    return set(moved.get_column("_partition"))


def test_rebuild_rewrites_only_the_new_batch_and_the_late_feedbacks_partition(incremental):
    data, before, _ = incremental
    layout = Layout(data)
    after_map = stored.read(layout, "silver", MAP_TABLE)
    kept = before["map"].join(after_map, on="group_id", suffix="_after")
    assert kept.height == before["map"].height  # no old group lost or renamed here
    assert (kept["_partition"] == kept["_partition_after"]).all()  # sticky
    new = after_map.join(before["map"], on="group_id", how="anti")
    assert new.height == 2 and set(new["batch"]) == {1}
    episodes = before["episodes"].filter(pl.col("native_id") == "tutoring/tut-1000")
    old_group = episodes.get_column("group_id").item()
    old_partition = before["map"].filter(pl.col("group_id") == old_group)["_partition"].item()
    expected = {old_partition, *new.get_column("_partition")}
    silver_after = stored.read(layout, "silver", DIGESTS_TABLE, with_partition=True)
    assert _digest_changes(before["silver"], silver_after) == expected
    gold_after = stored.read(layout, "gold", DIGESTS_TABLE, with_partition=True)
    assert _digest_changes(before["gold"], gold_after) == expected
    for layer, table, key in (("silver", "turns", "files"), ("gold", "turn_rewards", "gold_files")):
        untouched = {f for f in before[key] if not any(f"={p}/" in f for p in expected)}
        assert untouched and untouched <= set(stored.files(layout, layer, table)), table


def test_rebuild_transforms_only_the_new_batch_and_the_late_feedbacks_partition(incremental):
    """Silver is transformed again only where bronze changed: the input digests of the new
    batch's partitions (the two new conversations) and of the old partition of the conversation
    the late event rates change, no other partition's."""
    data, before, _ = incremental
    after = input_digests(Layout(data))
    moved = after.join(before["inputs"], on=["_partition", INPUTS], how="anti")
    after_map = stored.read(Layout(data), "silver", MAP_TABLE)
    new = after_map.join(before["map"], on="group_id", how="anti")
    assert set(new.get_column("_partition").str.slice(0, 6)) == {"b00001"}
    episodes = before["episodes"].filter(pl.col("native_id") == "tutoring/tut-1000")
    late = episodes.get_column("group_id").item()
    old_partition = before["map"].filter(pl.col("group_id") == late)["_partition"].item()
    assert old_partition.startswith("b00000-")
    assert set(moved.get_column("_partition")) == {old_partition, *new["_partition"]}
    unchanged = before["inputs"].join(after, on=["_partition", INPUTS], how="semi")
    assert unchanged.height == before["inputs"].height - 1  # every other partition as it was


def test_incremental_tables_and_release_equal_a_build_from_scratch(incremental):
    data, _, scratch = incremental
    built, fresh = _tables(data), _tables(scratch)
    for name, frame in built.items():
        assert frame.equals(fresh[name]), name
    assert _content_hash(data) == _content_hash(scratch)


def test_planner_requests_only_stale_partitions_and_their_runs_bring_gold_up_to_date(
    world, built_once
):
    """After new files reach silver, the planner asks for exactly the changed partitions; their
    partition runs commit them; the build then publishes gold equal to a build from scratch."""
    tmp = world
    raw, data = demo_built(built_once, 4, to=tmp / "planned")
    before = stored.read(Layout(data), "silver", MAP_TABLE)
    _add_new_files(raw)
    settings = settings_from_config(raw, data, data.parent / "turnlake-data.toml")
    defs = build_definitions(settings)
    instance = dg.DagsterInstance.ephemeral()
    upstream = [
        k
        for k in defs.resolve_all_asset_keys()
        if k.path[0].startswith(("bronze", "silver")) and k.path[0] != "silver_partition"
    ]
    build = defs.resolve_job_def(BUILD_JOB)
    assert build.execute_in_process(instance=instance, asset_selection=upstream).success
    resource = TurnlakeResource.from_settings(settings)
    planned = plan(resource, known=set())
    keys = sorted(r.partition_key for r in planned.run_requests)
    after = stored.read(Layout(data), "silver", MAP_TABLE)
    new = after.join(before, on="group_id", how="anti").get_column("_partition")
    episodes = stored.read(Layout(data), "silver", "episodes")
    late = episodes.filter(pl.col("native_id") == "tutoring/tut-1000")["group_id"].item()
    assert keys == sorted({*new, after.filter(pl.col("group_id") == late)["_partition"].item()})
    instance.add_dynamic_partitions(TURNLAKE_PARTITIONS.name, keys)
    job = defs.resolve_job_def(PARTITION_JOB)
    for key in keys:
        assert job.execute_in_process(instance=instance, partition_key=key).success
    assert isinstance(plan(resource, known=set(keys)), dg.SkipReason)
    _build(raw, data, 4)
    built, fresh = _tables(data), _tables(grown_demo_built(built_once, 4))
    for name in (n for n in built if n.startswith("gold.")):
        assert built[name].equals(fresh[name]), name


def test_changing_the_shard_count_on_a_built_data_root_rebuilds_to_the_same_tables(
    world, built_once
):
    """4 shards, then 8 on one data root: the build rewrites the tables in the new layout and
    ends with the tables of a build from scratch."""
    tmp = world
    raw, data = demo_built(built_once, 4, to=tmp / "reshard")
    _build(raw, data, 8)
    layout = Layout(data)
    assert stored.read(layout, "silver", MAP_TABLE).get_column("_partition").n_unique() == 8
    built, fresh = _tables(data), _tables(demo_built(built_once, 8)[1])
    for name, frame in built.items():
        assert frame.equals(fresh[name]), name


def test_tables_an_earlier_version_stored_whole_are_rewritten_in_partitions(world, built_once):
    """A data root whose silver and gold an earlier version stored whole (`shards = 0`, now
    refused): the next build rewrites them in partitions, equal to a build from scratch."""
    raw, data = demo_built(built_once, 4, to=world / "earlier")
    store_whole(data)
    _build(raw, data, 8)
    layout = Layout(data)
    assert stored.partitioned(layout, "silver", "turns")
    assert stored.partitioned(layout, "gold", "turn_rewards")
    assert stored.exists(layout, "silver", DIGESTS_TABLE)
    built, fresh = _tables(data), _tables(demo_built(built_once, 8)[1])
    for name, frame in built.items():
        assert frame.equals(fresh[name]), name
    assert _content_hash(data) == _content_hash(demo_built(built_once, 8)[1])


def test_shards_zero_is_refused_by_name_and_nothing_is_built(world, capsys):
    """`shards = 0` used to store tables whole: refused (exit 2), never read as another layout."""
    raw, data = world / "zero-raw", world / "zero-data"
    raw.mkdir()
    data.mkdir()
    with pytest.MonkeyPatch.context() as env:
        env.setenv("TURNLAKE_CONFIG", str(_config(data, 0)))
        args = ["build", "--raw-root", str(raw), "--data-root", str(data)]
        assert main([*args, "--log-level", "ERROR"]) == 2
    err = capsys.readouterr().err
    assert "[partitions] shards: 0 (tables stored whole) is no longer a layout" in err
    assert "use `shards = 1`" in err
    assert list(data.iterdir()) == []
