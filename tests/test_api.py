"""The public Python API (`import turnlake`) through the real pipeline, into a temporary folder:
one demo build at scale 1, then what a caller does with it."""

import inspect
import shutil

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import turnlake
from pipelines import api
from pipelines.release.store.files import read_manifest
from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A demo build through `turnlake.build`; yields its BuildResult and data root."""
    root = tmp_path_factory.mktemp("api")
    mp = pytest.MonkeyPatch()
    mp.setenv("DAGSTER_HOME", str(root))
    mp.delenv("TURNLAKE_RAW_ROOT", raising=False)
    mp.delenv("TURNLAKE_DATA_ROOT", raising=False)
    result = turnlake.build(data_root=root / "data", demo_if_empty=True, log_level="ERROR")
    yield result, root / "data"
    mp.undo()


def test_build_returns_a_verified_release_and_a_summary_without_failed_checks(built):
    result, data_root = built
    assert result.ok and result.run_ok and result.failed_checks == []
    assert result.demo_written and result.raw_root == data_root / "raw"
    assert result.latest_release.verified_in_run and result.latest_release.verified
    assert result.latest_release.path.parent == Layout(data_root).exports
    episodes = stored.read(Layout(data_root), "silver", "episodes").height
    rows = dict(result.summary.table_rows.select("table", "rows").iter_rows())
    assert rows["episodes"] == episodes > 0


def test_build_summary_reconciliation_is_the_one_a_fresh_reconciliation_gives(built):
    from pipelines.config.settings import Settings
    from pipelines.reports.summary import build_summary

    result, data_root = built
    fresh = build_summary(Settings(raw_root=result.raw_root, data_root=data_root))
    assert fresh.reconciliation["records_read"].sum() > 0
    assert fresh.reconciliation["pending"].sum() > 0
    assert_frame_equal(result.summary.reconciliation, fresh.reconciliation)


def test_load_release_gives_every_config_with_the_manifests_splits_and_rows(built, tmp_path):
    from datasets import DatasetDict

    result, data_root = built
    counts = read_manifest(result.latest_release.path)["counts"]
    assert {"sft", "preference", "kto", "rl_steps", "decisions"} <= set(counts)
    for config, splits in counts.items():
        ds = turnlake.load_release(config=config, data_root=data_root, cache_dir=tmp_path)
        assert isinstance(ds, DatasetDict)
        assert {split: ds[split].num_rows for split in ds} == splits, config
    sft = turnlake.load_release(result.latest_release.version, data_root=data_root)
    assert "messages" in sft["train"].column_names  # what TRL's SFTTrainer reads
    with pytest.raises(KeyError, match="no dataset 'nope'"):
        turnlake.load_release(config="nope", data_root=data_root, cache_dir=tmp_path)


def test_query_runs_sql_and_saved_queries_and_names_what_is_wrong(built):
    _, data_root = built
    episodes = turnlake.query("SELECT count(*) AS n FROM episodes", data_root=data_root)
    assert episodes["n"][0] == stored.read(Layout(data_root), "silver", "episodes").height
    saved = turnlake.query(saved="rewards_by_rule", data_root=data_root)
    direct = turnlake.query(turnlake.saved_queries()["rewards_by_rule"].sql, data_root=data_root)
    # DuckDB sums a partitioned table's files in parallel: a mean rounded to 3 places may land on
    # either side of a rounding boundary
    assert saved.height > 0
    assert_frame_equal(saved, direct, check_exact=False, abs_tol=1.001e-3)
    with pytest.raises(turnlake.UnknownQuery, match="no saved query 'nope'"):
        turnlake.query(saved="nope", data_root=data_root)
    with pytest.raises(turnlake.QueryFailed, match="SQL error"):
        turnlake.query("SELECT nope FROM episodes", data_root=data_root)


def test_verify_fails_after_a_released_file_is_tampered_with(built, tmp_path):
    result, data_root = built
    version = result.latest_release.version
    other = tmp_path / "other"
    pulled = turnlake.pull(version, Layout(other).exports, data_root=data_root)
    assert pulled.path == Layout(other).exports / version
    assert turnlake.verify(version, data_root=other).verified
    test_file, *_, train_file = sorted((pulled.path / "sft").glob("*.parquet"))  # test*, train*
    shutil.copy(test_file, train_file)
    with pytest.raises(turnlake.ReleaseMismatch) as mismatch:
        turnlake.verify(data_root=other)
    assert mismatch.value.version == version
    assert f"sft/{train_file.name}: sha256 differs from the manifest" in mismatch.value.problems
    with pytest.raises(turnlake.TargetExists):
        turnlake.pull(version, Layout(other).exports, data_root=data_root)
    with pytest.raises(turnlake.NoRelease):
        turnlake.verify("20000101-0000000000", data_root=other)


def test_release_of_unchanged_inputs_returns_the_existing_version(built):
    result, data_root = built
    again = turnlake.release(data_root=data_root)
    assert again.version == result.latest_release.version and not again.created


def test_status_names_the_last_run_and_finds_published_tables_healthy(built):
    result, data_root = built
    state = turnlake.status(data_root=data_root)
    assert state.last_run.run_id == result.run_id and state.last_run.status == "SUCCESS"
    assert state.ok and state.raw.changes.height == 0


def test_build_while_another_holds_the_data_root_raises_data_root_busy(built, lock_held_elsewhere):
    _, data_root = built
    lock_held_elsewhere(data_root)
    with pytest.raises(turnlake.DataRootBusy, match="another turnlake build"):
        turnlake.build(data_root=data_root, log_level="ERROR")


def test_build_of_a_raw_root_that_does_not_exist_raises_before_anything_is_written(tmp_path):
    with pytest.raises(turnlake.RawRootMissing, match="does not exist"):
        turnlake.build(raw_root=tmp_path / "absent", data_root=tmp_path / "data")
    assert not (tmp_path / "data").exists()


def test_a_failed_blocking_check_raises_build_failed_naming_it(built, tmp_path, monkeypatch):
    from pipelines.transforms import dialogue

    original = dialogue.to_silver

    def broken(bronze, settings, **evidence):
        out = original(bronze, settings, **evidence)
        out["turns"] = out["turns"].lazy().with_columns(role=pl.lit("robot"))
        return out

    monkeypatch.setattr(dialogue, "to_silver", broken)
    _, data_root = built
    with pytest.raises(turnlake.BuildFailed) as failed:
        turnlake.build(raw_root=data_root / "raw", data_root=tmp_path / "d", log_level="ERROR")
    checks = failed.value.result.failed_checks
    assert [c.name for c in checks if c.blocking] == ["silver_turns:turns_matches_contract"]
    assert failed.value.result.latest_release is None


def test_turnlake_re_exports_the_api_and_every_public_function_is_documented():
    assert turnlake.__all__ == api.__all__
    assert turnlake.LeakageError.__module__ == "pipelines.release.assemble"
    for name in api.__all__:
        thing = getattr(turnlake, name)
        assert thing is getattr(api, name)
        if inspect.isfunction(thing) or inspect.isclass(thing):
            # thing.__doc__, not inspect.getdoc: that one inherits a base class's docstring; and
            # a dataclass without one gets "Name(field, …)" made up for it.
            doc = thing.__doc__ or ""
            assert doc.strip() and not doc.startswith(f"{name}("), f"{name} has no docstring"
