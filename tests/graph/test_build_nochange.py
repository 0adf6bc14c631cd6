"""The no-change fast path of `turnlake build` (issue 15): after a fully successful build, a build
that would read the same inputs into the same data root answers from the record without a
Dagster run; every kind of change makes it run.

One built world per module (the clean fixtures, mtimes an hour old so none is "racy"). The tests
run in file order: the decision tests change one input each and put it back exactly (same bytes,
same stamps); the later ones build again: one --force build (read by two tests), a failed build
(after which the record is put back: the data root is the recorded build's), a forget."""

import contextlib
import io
import os
import shutil
import tomllib
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from pipelines import api
from pipelines.api import unchanged
from pipelines.cli.main import main
from pipelines.gold.params import load_params
from pipelines.orchestration import build_record
from pipelines.storage import engine
from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "clean"
HOUR_AGO_NS = 3600 * 10**9
OPTOUT = b'{"subject_kind": "participant", "subject_id": "nobody-here", "opted_out_at": "2025-01-01T00:00:00Z"}\n'  # noqa: E501


def backdate(path: Path, by_ns: int = HOUR_AGO_NS) -> None:
    stamp = path.stat().st_mtime_ns - by_ns
    os.utime(path, ns=(stamp, stamp))


@pytest.fixture(scope="module")
def world(tmp_path_factory, new_dagster_home):
    """Raw root (clean fixtures + an opt-out registry), data root, Dagster home, one build."""
    root = tmp_path_factory.mktemp("nochange")
    raw, data, home = root / "raw", root / "data", new_dagster_home()
    shutil.copytree(FIXTURES, raw)
    (raw / "consent").mkdir()
    (raw / "consent" / "optouts.jsonl").write_bytes(OPTOUT)
    for path in raw.rglob("*"):
        if path.is_file():
            backdate(path)
    mp = pytest.MonkeyPatch()
    mp.setenv("DAGSTER_HOME", str(home))
    for name in ("TURNLAKE_RAW_ROOT", "TURNLAKE_DATA_ROOT", "TURNLAKE_CONFIG", "TURNLAKE_KILL_AT"):
        mp.delenv(name, raising=False)
    try:
        assert main(build_args(raw, data)) == 0
        yield raw, data, home
    finally:
        mp.undo()


def build_args(raw: Path, data: Path, *more: str) -> list[str]:
    return [
        "build",
        "--raw-root",
        str(raw),
        "--data-root",
        str(data),
        "--log-level",
        "ERROR",
        *more,
    ]


def decide(world, **options) -> unchanged.Decision:
    raw, data, _ = world
    settings = api.resolve_settings(raw_root=raw, data_root=data)
    flags = {"force": False, "revalidate": False, "workers": 1, **options}
    return unchanged.decide(settings, load_params(), **flags)


def runs(home: Path) -> list[str]:
    with dg.DagsterInstance.from_config(str(home)) as instance:
        return [run.run_id for run in instance.get_runs()]


def assert_runs_because(world, part: str) -> None:
    decision = decide(world)
    assert decision.matched is None, f"fast path taken although {part} changed"
    assert decision.reasons == [f"{part} changed"]


def test_a_build_with_nothing_changed_says_so_and_launches_no_run(world, capsys):
    raw, data, home = world
    before = runs(home)
    capsys.readouterr()
    assert main(build_args(raw, data)) == 0
    out = capsys.readouterr().out
    record = build_record.read_record(Layout(data))
    assert out.startswith(f"nothing changed since build {record.run_id} (finished ")
    assert "`turnlake build --force` runs anyway" in out
    assert "Rows per silver table" in out and "Records per source" in out
    assert f"latest release {record.outcome['release']['version']}: verified" in out
    assert runs(home) == before  # no Dagster run was launched


def test_a_raw_file_added_modified_or_removed_in_an_old_folder_makes_it_run(world, tmp_path):
    raw, _, _ = world
    old = min((raw / "dialogues" / "tutoring").rglob("*.jsonl"))
    added = old.with_name("added.jsonl")
    shutil.copy2(old, added)
    assert_runs_because(world, "raw files")
    added.unlink()
    assert decide(world).matched is not None

    stamp = old.stat().st_mtime_ns
    os.utime(old, ns=(stamp - 10**9, stamp - 10**9))  # rewritten in place: same size, older mtime
    assert_runs_because(world, "raw files")
    os.utime(old, ns=(stamp, stamp))
    assert decide(world).matched is not None

    aside = tmp_path / old.name
    os.rename(old, aside)
    assert_runs_because(world, "raw files")
    os.rename(aside, old)
    assert decide(world).matched is not None


def test_an_opt_out_appended_makes_it_run(world):
    registry = world[0] / "consent" / "optouts.jsonl"
    stamp = registry.stat().st_mtime_ns
    registry.write_bytes(OPTOUT + OPTOUT.replace(b"nobody-here", b"someone-else"))
    backdate(registry)
    assert_runs_because(world, "raw files")
    registry.write_bytes(OPTOUT)
    os.utime(registry, ns=(stamp, stamp))
    assert decide(world).matched is not None


def test_a_settings_change_makes_it_run(world, tmp_path, monkeypatch):
    config = tmp_path / "turnlake.toml"
    text = Path("turnlake.toml").read_text()
    assert tomllib.loads(text)["splits"]["salt"] == "turnlake-splits-v1"
    config.write_text(text.replace("turnlake-splits-v1", "another-salt"))
    monkeypatch.setenv("TURNLAKE_CONFIG", str(config))
    assert_runs_because(world, "settings")


def test_a_reward_parameter_change_makes_it_run(world, tmp_path, monkeypatch):
    shipped = Path("rewards.toml").read_text()
    assert 'method = "mean"' in shipped
    rewards = tmp_path / "rewards.toml"
    rewards.write_text(shipped.replace('method = "mean"', 'method = "median"', 1))
    monkeypatch.setenv("TURNLAKE_REWARDS", str(rewards))
    assert_runs_because(world, "reward parameters")


def test_another_pseudonym_key_makes_it_run(world, monkeypatch):
    monkeypatch.setenv("TURNLAKE_PSEUDONYM_KEY", "another key of at least 16 bytes")
    assert_runs_because(world, "pseudonym key")


@pytest.fixture
def engine_copy(tmp_path, monkeypatch):
    """The engine's packages copied, and the engine digest computed from the copy."""
    for package in engine.ENGINE_PACKAGES:
        shutil.copytree(
            engine.ENGINE_ROOT / package,
            tmp_path / package,
            ignore=shutil.ignore_patterns("__pycache__"),
        )
    monkeypatch.setattr(engine, "ENGINE_ROOT", tmp_path)
    engine.engine_digest.cache_clear()
    yield tmp_path
    engine.engine_digest.cache_clear()


def test_a_code_change_makes_it_run(world, engine_copy):
    assert decide(world).matched is not None  # the same code, elsewhere
    edited = min((engine_copy / "pipelines" / "gold").glob("*.py"))
    edited.write_text(edited.read_text() + "\n# changed\n")
    engine.engine_digest.cache_clear()
    assert_runs_because(world, "code")


def test_a_template_change_makes_it_run(world, engine_copy):
    """Not only Python: a report template or a saved query is engine code too."""
    edited = engine_copy / "pipelines" / "warehouse" / "queries"
    query = min(edited.glob("*.sql"))
    query.write_text(query.read_text() + "\n-- changed\n")
    engine.engine_digest.cache_clear()
    assert_runs_because(world, "code")


def test_the_data_root_changed_by_another_command_makes_it_run(world, tmp_path):
    duckdb = Layout(world[1]).duckdb
    aside = tmp_path / "warehouse.duckdb"
    os.rename(duckdb, aside)
    assert_runs_because(world, "data root")
    os.rename(aside, duckdb)
    assert decide(world).matched is not None


def test_force_workers_revalidation_and_object_storage_always_run(world, monkeypatch):
    assert decide(world, force=True).reasons == ["--force"]
    assert decide(world, workers=2).reasons == ["--workers"]
    assert decide(world, revalidate=True).reasons == ["re-validation asked"]
    monkeypatch.setenv("TURNLAKE_KILL_AT", "silver:before_publish")
    assert decide(world).reasons == ["TURNLAKE_KILL_AT"]
    raw, _, _ = world
    settings = api.resolve_settings(raw_root=raw, data_root="s3://bucket/data")
    decision = unchanged.decide(settings, load_params(), force=False, revalidate=False, workers=1)
    assert decision.reasons == ["the data root is on object storage"]


@pytest.fixture(scope="module")
def forced(world) -> tuple[str, list[str]]:
    """One `build --force` on the world, every folder's stamp trusted at once (`RACY_NS` 0: its
    record keeps the listing of every folder it walked), for the two tests that read it: what it
    printed and the runs it launched."""
    from pipelines.sources import raw_state

    raw, data, home = world
    before = runs(home)
    printed = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(printed):
        mp.setattr(raw_state, "RACY_NS", 0)
        assert main(build_args(raw, data, "--force")) == 0
    return printed.getvalue(), [run for run in runs(home) if run not in before]


def test_force_runs_and_records_the_new_build(world, forced):
    printed, new = forced
    assert "nothing changed since" not in printed and "Rows per silver table" in printed
    assert len(new) == 1
    assert decide(world).matched.run_id == new[0]


def test_the_listing_kept_in_the_record_spares_the_next_process_reading_the_raw_folders(
    world, forced, monkeypatch
):
    from pipelines.sources import raw_state

    raw, data, _ = world
    monkeypatch.setattr(raw_state, "RACY_NS", 0)  # every folder's stamp trusted at once
    # `forced` recorded the build with the listing it walked
    raw_state._LISTINGS.clear()  # as a new process: only the record has it
    reads: list[str] = []
    read = raw_state._read_folder
    monkeypatch.setattr(raw_state, "_read_folder", lambda path: reads.append(path) or read(path))
    assert decide(world).matched is not None
    assert reads == []
    n_folders = sum(1 for p in raw.rglob("*") if p.is_dir()) + 1  # the root too
    raw_state._LISTINGS.clear()
    record = Layout(data).last_build
    kept = record.read_bytes()
    build_record.drop_record(Layout(data))  # no record (a build that failed): every folder read
    assert decide(world).matched is None and len(reads) == n_folders
    record.write_bytes(kept)  # as the forced build left it, for the tests after this one


def test_a_failed_build_leaves_no_record_so_the_next_one_runs(world, monkeypatch):
    import assets.warehouse

    raw, data, _ = world
    layout = Layout(data)
    recorded = build_record.read_record(layout)
    kept = layout.last_build.read_bytes()

    def broken(layout):
        raise RuntimeError("views cannot be written")

    monkeypatch.setattr(assets.warehouse, "write_views", broken)
    with pytest.raises(api.BuildFailed):
        api.build(raw_root=raw, data_root=data, force=True, log_level="CRITICAL")
    # The failed run left the data root as the recorded build did: only the missing record
    # keeps the next build from answering with the earlier build's result.
    assert build_record.data_root_state(layout) == recorded.data_root
    assert decide(world).reasons == ["no record of a fully successful build"]
    # the data root is the recorded build's: its record back, for the test after this one
    layout.last_build.write_bytes(kept)


def test_a_forget_makes_the_next_build_run(world):
    from pipelines.privacy.forget import erase_from_tables

    raw, data, _ = world
    assert main(build_args(raw, data)) == 0
    assert decide(world).matched is not None
    participant = (
        stored.read(Layout(data), "silver", "episodes")
        .filter(pl.col("source") == "study")["group_id"]
        .sort()[0]
    )
    # What a forget does to the tables alone (no opt-out appended, no build): another snapshot.
    erase_from_tables(Layout(data), [participant])
    assert_runs_because(world, "data root")
    api.forget("participant", participant, raw_root=raw, data_root=data)
    decision = decide(world)
    assert decision.matched is None and decision.reasons
