"""`turnlake` end to end on generated demo data, through Dagster, in a temporary folder."""

import polars as pl
import pytest

from pipelines.cli import main
from pipelines.layout import Layout


@pytest.fixture(scope="module")
def demo_build(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    data_root = root / "data"
    home = root / "dagster_home"
    home.mkdir()
    mp = pytest.MonkeyPatch()
    mp.setenv("DAGSTER_HOME", str(home))
    mp.delenv("TURNLAKE_RAW_ROOT", raising=False)
    mp.delenv("TURNLAKE_DATA_ROOT", raising=False)
    code = main(["build", "--data-root", str(data_root), "--demo-if-empty", "--log-level", "WARNING"])
    yield code, data_root, home
    mp.undo()


def test_build_generates_demo_data_when_raw_root_is_empty_and_succeeds(demo_build):
    code, data_root, _ = demo_build
    assert code == 0
    assert any((data_root / "raw").rglob("*.json*"))


def test_build_records_the_run_in_the_local_instance(demo_build):
    _, _, home = demo_build
    assert (home / "history" / "runs.db").exists() or any(home.rglob("runs.db"))


def test_build_prints_summary_tables(demo_build, capsys):
    _, data_root, _ = demo_build
    assert main(["sql", "--data-root", str(data_root), "SELECT source, count(*) AS n FROM episodes GROUP BY ALL"]) == 0
    out = capsys.readouterr().out
    for source in ("scenario", "study", "social_rl", "dialogue", "decision"):
        assert source in out


def test_demo_data_quarantines_bad_records_of_every_source(demo_build):
    _, data_root, _ = demo_build
    quarantine = pl.read_parquet(Layout(data_root).silver("quarantine"))
    assert quarantine["source"].n_unique() == 5
    assert quarantine["error_kind"].n_unique() >= 5


def test_sql_reports_errors_with_exit_code_one(demo_build, capsys):
    _, data_root, _ = demo_build
    assert main(["sql", "--data-root", str(data_root), "SELECT nope FROM episodes"]) == 1


def test_build_on_empty_raw_root_without_demo_flag_refuses(tmp_path):
    assert main(["build", "--raw-root", str(tmp_path / "empty"), "--data-root", str(tmp_path / "d")]) == 2


def test_build_exits_nonzero_when_a_blocking_check_fails(tmp_path, monkeypatch):
    from pipelines.transforms import dialogue

    original = dialogue.to_silver

    def broken(bronze, settings):
        out = original(bronze, settings)
        out["turns"] = out["turns"].lazy().with_columns(role=pl.lit("robot"))
        return out

    monkeypatch.setattr(dialogue, "to_silver", broken)
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    raw = tmp_path / "raw"
    assert main(["demo", "--raw-root", str(raw)]) == 0
    assert main(["build", "--raw-root", str(raw), "--data-root", str(tmp_path / "d"), "--log-level", "ERROR"]) == 1


def test_status_reports_new_raw_files_and_healthy_published_tables(demo_build, capsys):
    _, data_root, _ = demo_build
    new_file = data_root / "raw" / "dialogues" / "status-probe.jsonl"
    new_file.write_text('{"conversation_id": "probe", "turns": [{"role": "user", "content": "hi"}]}\n')
    try:
        assert main(["status", "--data-root", str(data_root)]) == 0
    finally:
        new_file.unlink()
    out = capsys.readouterr().out
    assert "dialogues/status-probe.jsonl" in out and "new" in out
    assert "Freshness per source" in out and "published tables and views: OK" in out


def test_second_build_while_one_holds_the_data_root_exits_with_a_clear_message(
    demo_build, capsys, lock_held_elsewhere
):
    from pipelines.lock import data_root_lock

    _, data_root, _ = demo_build
    holder = lock_held_elsewhere(data_root)
    assert main(["build", "--data-root", str(data_root), "--log-level", "ERROR"]) == 3
    assert "another turnlake build" in capsys.readouterr().err
    holder.kill()
    holder.wait()
    with data_root_lock(data_root):  # released by the dead holder
        pass


def test_subject_show_lists_every_table_holding_a_participant(demo_build, capsys):
    _, data_root, _ = demo_build
    participant = pl.read_parquet(Layout(data_root).silver("episodes")).filter(
        pl.col("source") == "study")["group_id"].sort()[0]
    assert main(["subject", "show", "participant", participant, "--data-root", str(data_root)]) == 0
    out = capsys.readouterr().out
    assert f"participant {participant}:" in out and "episodes:" in out and "turns:" in out
    assert main(["subject", "show", "participant", "nobody-at-all", "--data-root", str(data_root)]) == 0
    assert "0 rows" in capsys.readouterr().out
