"""The whole graph, materialized in-process into tmp_path, on the clean and dirty fixtures."""

import hashlib
import json
import shutil
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from assets.gold import gold_tables
from pipelines.checks.catalog import blocking_checks
from pipelines.config.names import SOURCES
from pipelines.config.settings import Settings, settings_from_config
from pipelines.definitions import ALL_ASSETS
from pipelines.orchestration.resources import TurnlakeResource
from pipelines.reports.summary import build_summary
from pipelines.schemas.silver import SILVER_MODELS
from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout
from pipelines.warehouse.views import query

PROJECT_CONFIG = Path(__file__).parents[2] / "turnlake.toml"
CLEAN = Path(__file__).parents[1] / "fixtures" / "clean"
DIRTY = Path(__file__).parents[1] / "fixtures" / "dirty"


def materialize_all(raw_root: Path, data_root: Path) -> dg.ExecuteInProcessResult:
    """Run every asset and its checks (each asset step runs its own); the fixtures follow the
    project's turnlake.toml conventions."""
    settings = settings_from_config(raw_root, data_root, PROJECT_CONFIG)
    return dg.materialize(
        ALL_ASSETS,
        resources={"turnlake": TurnlakeResource.from_settings(settings)},
        raise_on_error=False,
    )


def failed_checks(result: dg.ExecuteInProcessResult) -> list[str]:
    return [
        f"{e.event_specific_data.asset_key.to_user_string()}:{e.event_specific_data.check_name}"
        for e in result.all_events
        if e.event_type_value == "ASSET_CHECK_EVALUATION" and not e.event_specific_data.passed
    ]


CLEAN_MATERIALIZED = "clean-materialized"
CLEAN_CHECKS = "checks.json"  # beside raw/ and data/: the verdicts of the first build's checks


def check_verdicts(result: dg.ExecuteInProcessResult) -> dict[str, bool]:
    """`asset:check` → passed, for every check the run evaluated."""
    return {
        f"{e.asset_key.to_user_string()}:{e.check_name}": e.passed
        for e in result.get_asset_check_evaluations()
    }


def _materialize_clean(folder: Path) -> None:
    shutil.copytree(CLEAN, folder / "raw")
    result = materialize_all(folder / "raw", folder / "data")
    assert result.success and failed_checks(result) == []
    (folder / CLEAN_CHECKS).write_text(json.dumps(check_verdicts(result)))


def clean_materialized(built_once, to: Path) -> tuple[Path, Path]:
    """The clean fixtures copied to `to`/raw and every asset and check materialized into
    `to`/data with none failing: materialized once per test run, a copy of both at `to`."""
    built_once.copy(CLEAN_MATERIALIZED, _materialize_clean, to)
    return to / "raw", to / "data"


def clean_data_read_only(built_once) -> Path:
    """The data root `clean_materialized` copies, itself: only for reading."""
    return built_once.get(CLEAN_MATERIALIZED, _materialize_clean) / "data"


def clean_checks(built_once) -> dict[str, bool]:
    """`asset:check` → passed, of the run that materialized `clean_materialized`'s data."""
    folder = built_once.get(CLEAN_MATERIALIZED, _materialize_clean)
    return json.loads((folder / CLEAN_CHECKS).read_text())


def silver(data_root: Path, table: str) -> pl.DataFrame:
    return stored.read(Layout(data_root), "silver", table)


@pytest.fixture(scope="module")
def clean_build(tmp_path_factory, built_once):
    """(check verdicts, data root) of the clean fixtures' build, made once per test run; the
    module's copy of it is read-only."""
    _, data_root = clean_materialized(built_once, tmp_path_factory.mktemp("clean") / "built")
    return clean_checks(built_once), data_root


@pytest.fixture(scope="module")
def dirty_build(tmp_path_factory):
    """(check verdicts, data root) of the dirty fixtures' build; the data root read-only."""
    data_root = tmp_path_factory.mktemp("dirty") / "data"
    result = materialize_all(DIRTY, data_root)
    assert result.success
    return check_verdicts(result), data_root


def test_clean_fixtures_build_with_every_check_passing(clean_build):
    checks, _ = clean_build
    assert len(checks) == len(blocking_checks()) and all(checks.values()), checks


def test_clean_fixtures_give_episodes_and_turns_for_every_source_and_no_quarantine(clean_build):
    _, data_root = clean_build
    episodes = silver(data_root, "episodes")
    assert set(episodes["source"]) == set(SOURCES)
    turns = silver(data_root, "turns").join(
        episodes.select("episode_id", "source"), on="episode_id"
    )
    assert set(turns["source"]) == set(SOURCES)
    assert silver(data_root, "quarantine").height == 0


def test_dirty_fixtures_build_passes_checks_and_quarantines_every_source(dirty_build):
    checks, data_root = dirty_build
    assert len(checks) == len(blocking_checks()) and all(checks.values()), checks
    quarantine = silver(data_root, "quarantine")
    assert set(quarantine["source"]) == set(SOURCES)
    assert quarantine.filter(pl.col("message").str.len_chars() == 0).height == 0


def test_dirty_build_summary_reconciles_per_source(dirty_build):
    _, data_root = dirty_build
    summary = build_summary(Settings(raw_root=Path("."), data_root=data_root))
    assert summary.reconciliation["balanced"].all()
    rec = summary.reconciliation
    assert (rec["records_read"] == rec["bronze_rows"] + rec["quarantine_rows"]).all()
    assert rec["quarantine_rows"].sum() > 0


def test_duckdb_views_answer_sql_for_every_silver_table(clean_build):
    _, data_root = clean_build
    for table in SILVER_MODELS:
        expected = silver(data_root, table).height
        assert query(Layout(data_root), f"SELECT count(*) AS n FROM {table}")["n"][0] == expected


def _tree_digest(root: Path) -> dict[str, str]:
    layout = Layout(root)
    return {
        table: hashlib.sha256(
            stored.read(layout, "silver", table).write_ipc(None).getvalue()
        ).hexdigest()
        for table in SILVER_MODELS
    }


@pytest.mark.parametrize("build", ["clean_build", "dirty_build"])
def test_rebuild_on_unchanged_input_gives_identical_silver_tables(tmp_path, build, request):
    """A copy of a fresh build, built again from the same raw files."""
    _, first = request.getfixturevalue(build)
    raw = {"clean_build": first.parent / "raw", "dirty_build": DIRTY}[build]
    second = tmp_path / "b"
    shutil.copytree(first, second, symlinks=True)
    assert materialize_all(raw, second).success
    digest_a, digest_b = _tree_digest(first), _tree_digest(second)
    assert digest_a == digest_b and digest_a


@pytest.mark.parametrize("build", ["clean_build", "dirty_build"])
def test_gold_tables_are_built_and_every_gold_check_passes(build, request):
    verdicts, data_root = request.getfixturevalue(build)
    checks = {name: passed for name, passed in verdicts.items() if name.startswith("gold_")}
    assert (
        "gold_turn_rewards:rewards_traceable" in checks
        and "gold_quality_signals:quality_signals_matches_contract" in checks
    )
    assert all(checks.values()), checks
    assert stored.read(Layout(data_root), "gold", "turn_rewards").height > 0
    assert query(Layout(data_root), "SELECT count(*) AS n FROM turn_rewards")["n"][0] > 0


def test_gold_asset_applies_reward_overrides_from_run_config(built_once, tmp_path):
    _, data_root = clean_materialized(built_once, tmp_path / "own")  # gold is materialized again
    settings = settings_from_config(data_root / "unused", data_root, PROJECT_CONFIG)
    overrides = '{"dialogue_feedback": {"rating_map": {"1": 0.5, "0": 0.0, "-1": -0.5}}}'
    result = dg.materialize(
        [gold_tables],
        resources={"turnlake": TurnlakeResource.from_settings(settings)},
        run_config={"ops": {"gold_tables": {"config": {"overrides": overrides}}}},
    )
    assert result.success
    rewards = stored.read(Layout(data_root), "gold", "turn_rewards")
    rated_only = rewards.filter(pl.col("target_id") == "dialogue:support/c-101#2")
    assert rated_only["reward"].to_list() == [
        -0.5
    ]  # thumbs-down now maps to -0.5, not the default -0.8
