"""`turnlake` end to end on generated demo data, through Dagster, in a temporary folder."""

import click
import polars as pl
import pytest

from pipelines.cli.main import main
from pipelines.config.names import SOURCES
from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout


@pytest.fixture(scope="module")
def demo_build(demo_warehouse_and_home):
    """`turnlake build --data-root D --demo-if-empty` into an empty D: the shared demo build
    (tests/conftest.py `build_demo`, which asserts its exit code), a copy of this module's own
    with the Dagster home that recorded its run: D and that home."""
    data_root, home = demo_warehouse_and_home
    mp = pytest.MonkeyPatch()
    mp.setenv("DAGSTER_HOME", str(home))
    mp.delenv("TURNLAKE_RAW_ROOT", raising=False)
    mp.delenv("TURNLAKE_DATA_ROOT", raising=False)
    yield data_root, home
    mp.undo()


def test_build_generates_demo_data_when_raw_root_is_empty_and_succeeds(demo_build):
    data_root, _ = demo_build  # its exit code is 0: `build_demo` asserts it where it runs
    assert any((data_root / "raw").rglob("*.json*"))


def test_build_records_the_run_in_the_local_instance(demo_build):
    import dagster as dg

    _, home = demo_build
    with dg.DagsterInstance.from_config(str(home)) as instance:
        runs = [(run.job_name, run.status) for run in instance.get_runs()]
    assert ("turnlake_build", dg.DagsterRunStatus.SUCCESS) in runs


def test_build_prints_summary_tables(demo_build, capsys):
    data_root, _ = demo_build
    assert (
        main(
            [
                "sql",
                "--data-root",
                str(data_root),
                "SELECT source, count(*) AS n FROM episodes GROUP BY ALL",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    for source in ("scenario", "study", "social_rl", "dialogue", "decision"):
        assert source in out


def test_demo_data_quarantines_bad_records_of_every_source(demo_build):
    data_root, _ = demo_build
    quarantine = stored.read(Layout(data_root), "silver", "quarantine")
    assert set(quarantine["source"]) == set(SOURCES)
    assert quarantine["error_kind"].n_unique() >= 5


def test_sql_reports_errors_with_exit_code_one(demo_build, capsys):
    data_root, _ = demo_build
    assert main(["sql", "--data-root", str(data_root), "SELECT nope FROM episodes"]) == 1


def test_build_on_a_raw_root_that_does_not_exist_refuses(tmp_path, capsys):
    assert (
        main(["build", "--raw-root", str(tmp_path / "absent"), "--data-root", str(tmp_path / "d")])
        == 2
    )
    assert f"raw root {tmp_path / 'absent'} does not exist" in capsys.readouterr().err


def test_build_on_an_empty_or_unrecognised_raw_root_builds_nothing_says_so_and_succeeds(
    tmp_path, monkeypatch, capsys
):
    # Issue 13, item 13: an empty raw root used to exit 2, and files no adapter claims used to
    # fail the build with FAILED CHECK gold_splits:splits_leak_free and no word about the files.
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    raw, data = tmp_path / "raw", tmp_path / "d"
    raw.mkdir()
    build = ["build", "--raw-root", str(raw), "--data-root", str(data), "--log-level", "ERROR"]
    assert main(build) == 0
    out = capsys.readouterr().out
    assert f"raw root {raw} holds no files: building empty tables" in out
    assert "nothing to release: no episodes were built" in out and "not recognised" not in out
    (raw / "sharegpt").mkdir()
    for name in ("a.jsonl", "b.jsonl"):
        (raw / "sharegpt" / name).write_text('{"text": "hello"}\n')
    assert main(build) == 0
    captured = capsys.readouterr()
    assert (
        f"not recognised: 2 files under {raw / 'sharegpt'} (e.g. sharegpt/a.jsonl, "
        "sharegpt/b.jsonl)" in captured.out
    )
    assert "nothing to release" in captured.out and "FAILED CHECK" not in captured.err
    assert not list((data / "exports").glob("2*"))
    assert main(["status", "--raw-root", str(raw), "--data-root", str(data)]) == 0
    assert f"not recognised: 2 files under {raw / 'sharegpt'}" in capsys.readouterr().out


def test_a_bad_setting_stops_every_command_before_it_runs_and_names_file_and_key(
    tmp_path, monkeypatch, capsys
):
    config = tmp_path / "turnlake.toml"
    config.write_text('[ingest]\nbatch_file = 10\n[schedule]\ncron = "every night"\n')
    monkeypatch.setenv("TURNLAKE_CONFIG", str(config))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    (tmp_path / "raw").mkdir()
    for command in (["build"], ["status"], ["sql", "SELECT 1"]):
        assert (
            main(
                [*command, "--raw-root", str(tmp_path / "raw"), "--data-root", str(tmp_path / "d")]
            )
            == 2
        )
        err = capsys.readouterr().err
        assert f"invalid settings in {config}" in err
        assert "[ingest] batch_file: unknown key; allowed: remove_deleted_files, batch_files" in err
        assert "[schedule] cron: 'every night' is not a cron expression" in err
    assert not (tmp_path / "d").exists()  # nothing ran


def test_a_bad_rewards_file_stops_the_build_before_it_runs(tmp_path, monkeypatch, capsys):
    rewards = tmp_path / "rewards.toml"
    rewards.write_text('[aggregation]\nmethod = "mode"\n')
    monkeypatch.setenv("TURNLAKE_REWARDS", str(rewards))
    (tmp_path / "raw").mkdir()
    assert (
        main(["build", "--raw-root", str(tmp_path / "raw"), "--data-root", str(tmp_path / "d")])
        == 2
    )
    err = capsys.readouterr().err
    assert (
        f"invalid settings in {rewards}" in err
        and "[aggregation] method: 'mode' is not one of" in err
    )


def test_build_exits_nonzero_when_a_blocking_check_fails(tmp_path, monkeypatch):
    from pipelines.transforms import dialogue

    original = dialogue.to_silver

    def broken(bronze, settings, **evidence):
        out = original(bronze, settings, **evidence)
        out["turns"] = out["turns"].lazy().with_columns(role=pl.lit("robot"))
        return out

    monkeypatch.setattr(dialogue, "to_silver", broken)
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    raw = tmp_path / "raw"
    assert main(["demo", "--raw-root", str(raw)]) == 0
    assert (
        main(
            [
                "build",
                "--raw-root",
                str(raw),
                "--data-root",
                str(tmp_path / "d"),
                "--log-level",
                "ERROR",
            ]
        )
        == 1
    )


def test_status_reports_new_raw_files_and_healthy_published_tables(demo_build, capsys):
    data_root, _ = demo_build
    new_file = data_root / "raw" / "dialogues" / "status-probe.jsonl"
    new_file.write_text(
        '{"conversation_id": "probe", "turns": [{"role": "user", "content": "hi"}]}\n'
    )
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
    from pipelines.storage.lock import data_root_lock

    data_root, _ = demo_build
    holder = lock_held_elsewhere(data_root)
    assert main(["build", "--data-root", str(data_root), "--log-level", "ERROR"]) == 3
    assert "another turnlake build" in capsys.readouterr().err
    holder.kill()
    holder.wait()
    with data_root_lock(Layout(data_root)):  # released by the dead holder
        pass


def test_subject_show_lists_every_table_holding_a_participant(demo_build, capsys):
    data_root, _ = demo_build
    participant = (
        stored.read(Layout(data_root), "silver", "episodes")
        .filter(pl.col("source") == "study")["group_id"]
        .sort()[0]
    )
    assert main(["subject", "show", "participant", participant, "--data-root", str(data_root)]) == 0
    out = capsys.readouterr().out
    assert f"participant {participant}:" in out and "episodes:" in out and "turns:" in out
    assert (
        main(["subject", "show", "participant", "nobody-at-all", "--data-root", str(data_root)])
        == 0
    )
    assert "0 rows" in capsys.readouterr().out


def _commands(group, path=("turnlake",)):
    for name, command in group.commands.items():
        yield (*path, name), command
        if isinstance(command, click.Group):
            yield from _commands(command, (*path, name))


def test_every_command_option_and_argument_has_help_text():
    from pipelines.cli.main import cli

    commands = list(_commands(cli))
    assert len(commands) >= 13
    for path, command in commands:
        where = " ".join(path)
        assert command.help and command.get_short_help_str(), f"{where}: no help"
        for param in command.params:
            if isinstance(param, click.Option):
                assert param.help, f"{where} {param.opts[0]}: no help"
            else:  # an argument has no help of its own: the command's help describes it
                assert param.human_readable_name in command.help, f"{where}: {param.name}"


def test_help_lists_every_command_and_the_exit_codes(capsys):
    from pipelines.cli.main import cli

    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for name, command in cli.commands.items():
        assert f"  {name} " in out and command.get_short_help_str(limit=200) in out, name
    assert "Exit codes:" in out
    for code in ("0  done", "1  a blocking check failed", "2  bad settings", "3  the data root"):
        assert code in out


def test_bad_usage_and_missing_things_exit_two(tmp_path, capsys):
    assert main(["build", "--no-such-option"]) == 2
    assert "No such option '--no-such-option'" in capsys.readouterr().err
    assert main(["verify", "--data-root", str(tmp_path)]) == 2
    assert f"turnlake verify: no releases under {tmp_path / 'exports'}" in capsys.readouterr().err
    assert main(["sql", "--data-root", str(tmp_path), "SELECT 1"]) == 2
    assert "run `turnlake build` first" in capsys.readouterr().err
