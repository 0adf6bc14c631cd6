"""The blocking checks run inside the asset step of their group (no step of their own), still
block what is downstream, and are answered from the validation ledger when what they read is
unchanged."""

import os
import shutil
from pathlib import Path

import dagster as dg
import pandera.polars as pa
import polars as pl
import pytest

from pipelines.checks import catalog
from pipelines.checks import factory as checks
from pipelines.checks.ledger import REVALIDATE_ENV, ledger_entry
from pipelines.cli.main import main
from pipelines.definitions import ALL_ASSETS, BUILD_JOB, defs
from pipelines.schemas.silver import SILVER_MODELS
from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout
from tests.graph.test_build_graph import materialize_all

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
def first_build(tmp_path_factory):
    data_root = tmp_path_factory.mktemp("checks") / "data"
    result = materialize_all(CLEAN, data_root)
    assert result.success
    return data_root, result.run_id


@pytest.fixture
def rebuild(first_build, tmp_path):
    """A copy of the first build's data root (ledger included) and a function that rebuilds it."""
    data_root = tmp_path / "data"
    shutil.copytree(first_build[0], data_root, symlinks=True)
    return data_root, lambda: materialize_all(CLEAN, data_root)


@pytest.fixture
def validated(monkeypatch):
    """Names of the Pandera models validated from now on."""
    names: list[str] = []
    original = pa.DataFrameModel.validate.__func__

    def spy(cls, *args, **kwargs):
        names.append(cls.__name__)
        return original(cls, *args, **kwargs)

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
    assert not ledger_entry(tmp_path / "d", "silver_turns:turns_matches_contract").exists()


def test_unchanged_build_reuses_every_check_without_validating(first_build, rebuild, validated):
    _, build = rebuild
    result = build()
    assert result.success
    checks_run = evaluations(result)
    assert len(checks_run) == 44 and all(c["passed"] for c in checks_run.values())
    assert all(c["reused"] and c["validated_in_run"] == first_build[1] for c in checks_run.values())
    assert validated == []


def test_changed_silver_table_is_validated_again(rebuild, validated):
    data_root, build = rebuild
    layout = Layout(data_root)
    silver = stored.snapshot(layout, "silver")
    turns = {"turns": stored.read(layout, "silver", "turns")}
    stored.publish(layout, "silver", turns, silver.meta)  # same rows, a new version
    checks_run = evaluations(build())
    validated_again = {k for k, c in checks_run.items() if not c.get("reused")}
    assert validated_again == {
        "silver_turns:turns_matches_contract",
        "silver_episodes:references_resolve",
        "gold_splits:splits_leak_free",
    }
    assert validated == [SILVER_MODELS["turns"].__name__]


def test_changed_contract_code_validates_again(rebuild, validated, monkeypatch):
    _, build = rebuild
    original = catalog.engine_digest()
    monkeypatch.setattr(catalog, "engine_digest", lambda: "edited " + original)
    checks_run = evaluations(build())
    assert not any(c.get("reused") for c in checks_run.values())
    assert len(validated) == N_CONTRACTS


def test_corrupted_ledger_entry_is_validated_again(rebuild, validated):
    data_root, build = rebuild
    entry = ledger_entry(data_root, "silver_episodes:episodes_matches_contract")
    entry.write_text("{not json")
    checks_run = evaluations(build())
    assert not checks_run["silver_episodes:episodes_matches_contract"].get("reused")
    assert sum(not c.get("reused") for c in checks_run.values()) == 1
    # judged again, its partitions (unchanged) answered from their own passes, not re-read
    episodes = checks_run["silver_episodes:episodes_matches_contract"]
    assert episodes["partitions_validated"] == 0 and episodes["partitions_reused"] > 0
    assert len(validated) == 0 and '"digest"' in entry.read_text()


def test_revalidate_flag_validates_every_check(rebuild, validated, tmp_path, monkeypatch):
    data_root, _ = rebuild
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    argv = [
        "build",
        "--raw-root",
        str(CLEAN),
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
    assert len(checks_run) == 44 and not any(c.get("reused") for c in checks_run.values())
    assert len(validated) == N_CONTRACTS


def test_build_reports_the_runs_release_check_instead_of_verifying_again(
    rebuild, tmp_path, monkeypatch, capsys
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
        str(CLEAN),
        "--data-root",
        str(data_root),
        "--log-level",
        "ERROR",
    ]
    assert main(argv) == 0
    assert "verified (release_verifies, this run)" in capsys.readouterr().out
    assert (
        calls == []
    )  # the check's verdict came from the ledger; the CLI did not re-hash the release
