"""The blocking checks run inside the asset step of their group (no step of their own), still
block what is downstream, and judge on every run; a contract reads again only the partitions and
part files it has not passed with their digest and the engine before."""

import os
import shutil
from pathlib import Path

import dagster as dg
import pandera.polars as pa
import polars as pl
import pytest

from pipelines.checks import catalog
from pipelines.checks import factory as checks
from pipelines.checks.revalidate import REVALIDATE_ENV
from pipelines.cli.main import main
from pipelines.definitions import ALL_ASSETS, BUILD_JOB, defs
from pipelines.ingest import log as ingest_log
from pipelines.partitions.store import recorded_passes
from pipelines.schemas.gold import WAREHOUSE_MODELS
from pipelines.schemas.silver import SILVER_MODELS
from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout
from tests.graph.test_build_graph import clean_materialized, materialize_all

CLEAN = Path(__file__).parents[1] / "fixtures" / "clean"
# each group's checks -> the asset step that runs them
GROUPS = {
    "bronze_scenario": "bronze_scenario",
    "bronze_study": "bronze_study",
    "bronze_social_rl": "bronze_social_rl",
    "bronze_dialogue": "bronze_dialogue",
    "bronze_decision": "bronze_decision",
    "bronze_oasst": "bronze_oasst",
    "bronze_hh_rlhf": "bronze_hh_rlhf",
    "silver": "silver_tables",
    "gold": "gold_tables",
    "splits": "gold_splits",
    "release": "release",
}
N_CONTRACTS = sum(
    c.name.endswith("_matches_contract") for c in checks.blocking_checks()
)  # bronze+silver+gold


@pytest.fixture(autouse=True)
def _no_forced_revalidation(monkeypatch):
    monkeypatch.delenv(REVALIDATE_ENV, raising=False)


@pytest.fixture(scope="module")
def first_build(tmp_path_factory, built_once) -> Path:
    """The data root of the clean fixtures' first build (made once per test run), copied: every
    partition and part file validated by that run and its passes recorded."""
    _, data_root = clean_materialized(built_once, tmp_path_factory.mktemp("checks") / "built")
    return data_root


@pytest.fixture
def raw_root(first_build) -> Path:
    """The raw files the first build read (its own copy of the clean fixtures)."""
    return first_build.parent / "raw"


@pytest.fixture
def rebuild(first_build, raw_root, tmp_path):
    """A copy of the first build's data root (passes included) and a function that rebuilds it."""
    data_root = tmp_path / "data"
    shutil.copytree(first_build, data_root, symlinks=True)
    return data_root, lambda: materialize_all(raw_root, data_root)


@pytest.fixture
def validated(monkeypatch):
    """(model name, rows) of every frame a layer's contract model validates from now on. The
    warehouse's computed tables (`WAREHOUSE_MODELS`: rater agreement) are left out: they are no
    layer's table and no check's, made again with the views of every build."""
    names: list[tuple[str, int]] = []
    original = pa.DataFrameModel.validate.__func__

    def spy(cls, frame, *args, **kwargs):
        if cls not in WAREHOUSE_MODELS.values():
            names.append((cls.__name__, frame.height))
        return original(cls, frame, *args, **kwargs)

    monkeypatch.setattr(pa.DataFrameModel, "validate", classmethod(spy))
    return names


def evaluations(result: dg.ExecuteInProcessResult) -> dict[str, dict]:
    return {
        f"{e.event_specific_data.asset_key.to_user_string()}:{e.event_specific_data.check_name}": {
            "passed": e.event_specific_data.passed,
            **{k: v.value for k, v in e.event_specific_data.metadata.items()},
        }
        for e in result.all_events
        if e.event_type_value == "ASSET_CHECK_EVALUATION"
    }


def with_rows(validated: list[tuple[str, int]]) -> list[str]:
    """The models that validated rows (a table without any validates its columns every time)."""
    return [name for name, rows in validated if rows]


def read_again(checks_run: dict[str, dict]) -> dict[str, int]:
    """Contract → how many partitions (or bronze part files) it read again, where any."""
    return {
        name: check["partitions_validated"]
        for name, check in checks_run.items()
        if name.endswith("_matches_contract") and check["partitions_validated"]
    }


def reused(checks_run: dict[str, dict]) -> dict[str, int]:
    """Contract → how many partitions (or bronze part files) it answered from its passes."""
    return {
        name: check["partitions_reused"]
        for name, check in checks_run.items()
        if name.endswith("_matches_contract")
    }


def test_all_checks_run_inside_the_asset_step_of_their_group():
    job = defs.resolve_job_def(BUILD_JOB)
    steps = {node.name for node in job.graph.node_defs}
    assert len(steps) == 12  # the asset steps only: no step of checks alone
    step_of_check = {
        (key.asset_key.to_user_string(), key.name): asset.node_def.name
        for asset in ALL_ASSETS
        for key in asset.check_keys
    }
    assert {(c.asset, c.name): GROUPS[c.step] for c in checks.blocking_checks()} == step_of_check
    assert set(GROUPS.values()) <= steps
    assert (
        len(defs.get_repository_def().asset_graph.asset_check_keys)
        == len(checks.blocking_checks())
        == 44  # 34 + social_rl policy states and attachments (bronze), policy_states (silver)
        # + oasst and hh_rlhf: one bronze contract and nothing_lost each
        # + decision rating events and replay results (bronze), replays (silver)
    )


def test_failing_silver_contract_stops_gold_and_release_and_the_build_exits_1(
    tmp_path, monkeypatch, capsys
):
    from pipelines.transforms import dialogue

    original = dialogue.to_silver

    def robot_turns(bronze, settings, **evidence):
        out = original(bronze, settings, **evidence)
        out["turns"] = out["turns"].lazy().with_columns(role=pl.lit("robot"))
        return out

    monkeypatch.setattr(dialogue, "to_silver", robot_turns)
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    argv = [
        "build",
        "--raw-root",
        str(CLEAN),
        "--data-root",
        str(tmp_path / "d"),
        "--log-level",
        "ERROR",
    ]
    assert main(argv) == 1
    assert "FAILED CHECK silver_turns:turns_matches_contract" in capsys.readouterr().err
    with dg.DagsterInstance.get() as instance:

        def materialized(asset: str) -> bool:
            return instance.get_latest_materialization_event(dg.AssetKey(asset)) is not None

        assert materialized("silver_turns")
        assert not any(
            materialized(a)
            for a in ("gold_turn_rewards", "gold_splits", "release", "warehouse_views")
        )
    # no partition holding a failed row is remembered as passed: the next build reads it again
    layout = Layout(tmp_path / "d")
    turns = stored.scan(layout, "silver", "turns", with_partition=True)
    failed = set(
        turns.filter(pl.col("role") == "robot").select("_partition").collect()["_partition"]
    )
    engine = catalog.engine_digest()
    assert failed and failed.isdisjoint(recorded_passes(layout, "silver", "turns", engine))
    assert recorded_passes(layout, "silver", "episodes", engine)  # a failing step records too


def test_unchanged_build_judges_every_check_reading_no_partition_again(rebuild, validated):
    data_root, build = rebuild
    layout = Layout(data_root)
    snapshots = {layer: len(stored.history(layout, layer)) for layer in stored.LAYERS}
    result = build()
    assert result.success
    checks_run = evaluations(result)
    assert len(checks_run) == 44 and all(c["passed"] for c in checks_run.values())
    assert read_again(checks_run) == {}
    assert reused(checks_run)["silver_turns:turns_matches_contract"] > 0
    assert with_rows(validated) == []
    # the passes held: nothing new to record, so no layer published again
    assert {layer: len(stored.history(layout, layer)) for layer in stored.LAYERS} == snapshots


def test_republished_whole_silver_table_is_validated_again(rebuild, validated):
    data_root, build = rebuild
    layout = Layout(data_root)
    assert not stored.partitioned(layout, "silver", "contexts")  # stored whole: one partition
    silver = stored.snapshot(layout, "silver")
    contexts = {"contexts": stored.read(layout, "silver", "contexts")}
    stored.publish(layout, "silver", contexts, silver.meta)  # same rows, new files
    checks_run = evaluations(build())
    assert all(c["passed"] for c in checks_run.values())
    # keyed by its files, which it has not passed with
    assert read_again(checks_run) == {"silver_contexts:contexts_matches_contract": 1}
    assert with_rows(validated) == [SILVER_MODELS["contexts"].__name__]


def test_changed_contract_code_validates_again(rebuild, validated, monkeypatch):
    _, build = rebuild
    original = catalog.engine_digest()
    monkeypatch.setattr(catalog, "engine_digest", lambda: "edited " + original)
    checks_run = evaluations(build())
    assert set(reused(checks_run).values()) == {0}
    assert len(validated) == N_CONTRACTS


def test_a_bronze_part_without_a_verdict_is_validated_again(rebuild, validated):
    """A missing verdict in the ingest log (a log of an earlier version, a new part) only means
    "judge it again": the part is read, the others are not, and its pass is recorded."""
    data_root, build = rebuild
    layout = Layout(data_root)
    log = ingest_log.read_log(layout, "study")
    assert log.get_column("passed").null_count() == 0  # every part judged by the first build
    unjudged = pl.lit(None, log.schema["passed"]).alias("passed")
    ingest_log.write_log(layout, "study", log.with_columns(unjudged))
    checks_run = evaluations(build())
    study = {n: c for n, c in read_again(checks_run).items() if n.startswith("bronze_study:")}
    assert study and set(study) == set(read_again(checks_run))  # no other source read again
    after = ingest_log.read_log(layout, "study")
    assert after.get_column("passed").null_count() == 0  # recorded again


def test_revalidate_flag_validates_every_check(rebuild, raw_root, validated, tmp_path, monkeypatch):
    data_root, _ = rebuild
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    argv = [
        "build",
        "--raw-root",
        str(raw_root),
        "--data-root",
        str(data_root),
        "--log-level",
        "ERROR",
        "--revalidate",
    ]
    assert main(argv) == 0
    assert len(validated) == N_CONTRACTS
    assert REVALIDATE_ENV not in os.environ


def test_revalidate_env_validates_every_check(rebuild, validated, monkeypatch):
    _, build = rebuild
    monkeypatch.setenv(REVALIDATE_ENV, "1")
    checks_run = evaluations(build())
    assert len(checks_run) == 44 and set(reused(checks_run).values()) == {0}
    assert len(validated) == N_CONTRACTS


def test_build_reports_the_runs_release_check_instead_of_verifying_again(
    rebuild, raw_root, tmp_path, monkeypatch, capsys
):
    import pipelines.release.store.verify as verify_module

    data_root, _ = rebuild
    calls: list[Path] = []
    real = verify_module.verify_release
    monkeypatch.setattr(
        verify_module, "verify_release", lambda path: calls.append(path) or real(path)
    )
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    argv = [
        "build",
        "--raw-root",
        str(raw_root),
        "--data-root",
        str(data_root),
        "--log-level",
        "ERROR",
    ]
    assert main(argv) == 0
    assert "verified (release_verifies, this run)" in capsys.readouterr().out
    assert len(calls) == 1  # the run's check verified it; the CLI did not hash it again
