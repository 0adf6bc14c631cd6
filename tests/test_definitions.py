"""The code location loads, and every asset carries its blocking checks."""

import dagster as dg

from pipelines.config.names import SOURCES
from pipelines.definitions import BUILD_JOB, defs
from pipelines.orchestration.partitions import PARTITION_JOB
from pipelines.schemas.silver import SILVER_MODELS


def test_definitions_load_with_every_layer_and_the_build_job():
    repo = defs.get_repository_def()
    keys = {key.to_user_string() for key in repo.asset_graph.get_all_asset_keys()}
    assert {f"bronze_{s}" for s in SOURCES} <= keys
    assert {f"silver_{t}" for t in SILVER_MODELS} <= keys
    assert "warehouse_views" in keys
    # The build job materializes every asset but the partitioned ones, which have their own job
    # (resolving a job raises if it does not exist).
    selected = defs.resolve_job_def(BUILD_JOB).asset_layer.selected_asset_keys
    partition_assets = {"silver_partition", "gold_partition"}
    assert {key.to_user_string() for key in selected} == keys - partition_assets
    partitioned = defs.resolve_job_def(PARTITION_JOB).asset_layer.selected_asset_keys
    assert {key.to_user_string() for key in partitioned} == partition_assets


def test_silver_and_gold_partitions_share_one_definition_so_each_key_runs_silver_then_gold():
    """A backfill of both partitioned assets runs a key's gold after that key's silver: one
    dynamic partitions definition, under which Dagster maps a key to the same key."""
    graph = defs.get_repository_def().asset_graph
    silver, gold = dg.AssetKey("silver_partition"), dg.AssetKey("gold_partition")
    assert graph.get(silver).partitions_def == graph.get(gold).partitions_def
    assert silver in graph.get(gold).parent_keys
    mapping = graph.get_partition_mapping(gold, silver)
    assert isinstance(mapping, dg.IdentityPartitionMapping)


def test_every_bronze_and_silver_asset_has_a_blocking_check():
    checks = defs.get_repository_def().asset_graph.asset_check_keys
    checked = {key.asset_key.to_user_string() for key in checks}
    assert {f"bronze_{s}" for s in SOURCES} | {f"silver_{t}" for t in SILVER_MODELS} <= checked
    nodes = [defs.get_repository_def().asset_graph.get_check_spec(k) for k in checks]
    assert all(spec.blocking for spec in nodes)


def test_each_bronze_asset_reconciles_records():
    checks = defs.get_repository_def().asset_graph.asset_check_keys
    assert {(k.asset_key.to_user_string(), k.name) for k in checks} >= {
        (f"bronze_{s}", "nothing_lost") for s in SOURCES
    }


def test_resource_roots_follow_environment(monkeypatch, tmp_path):
    from pipelines.config.settings import settings_from_env
    from pipelines.definitions import build_definitions

    monkeypatch.setenv("TURNLAKE_RAW_ROOT", str(tmp_path / "raw"))
    monkeypatch.setenv("TURNLAKE_DATA_ROOT", str(tmp_path / "d"))
    built = build_definitions(settings_from_env())
    resource = built.resources["turnlake"]
    assert isinstance(resource, dg.ConfigurableResource)
    assert resource.raw_root == str(tmp_path / "raw") and resource.data_root == str(tmp_path / "d")
