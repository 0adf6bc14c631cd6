"""`turnlake build`'s progress when stdout is not a terminal: one plain line per step."""

import logging
import re

import pytest

from pipelines.api.progress import Progress
from pipelines.cli.main import main
from pipelines.cli.progress import PlainLines


def test_plain_lines_print_one_line_per_finished_step_with_its_last_message():
    lines = PlainLines()
    events = [
        (Progress("plan", total=2, text="build: 2 steps"), logging.INFO),
        (Progress("step_start", step="bronze_a"), logging.INFO),
        (Progress("message", step="bronze_a", text="first"), logging.INFO),
        (Progress("message", step="bronze_a", text="a: 3 files"), logging.INFO),
        (Progress("source", step="bronze_a", source="a", done=3, total=3), logging.INFO),
        (Progress("step_done", step="bronze_a"), logging.INFO),
        (Progress("step_start", step="silver"), logging.INFO),
        (Progress("message", step="silver", text="odd row"), logging.WARNING),
        (Progress("step_failed", step="silver", text="silver: ValueError: bad"), logging.ERROR),
    ]
    printed = [lines.line(progress, level) for progress, level in events]
    shown = [re.sub(r"\d+\.\d s", "T s", line) for line in printed if line]
    assert shown == [
        "build: 2 steps",
        "[1/2] bronze_a  T s  a: 3 files",
        "silver: WARNING: odd row",
        "[2/2] silver  T s  FAILED: ValueError: bad",
    ]


def test_build_off_a_terminal_prints_plain_step_lines_not_dagster_log_lines(
    clean_root, tmp_path, new_dagster_home, capsys
):
    mp = pytest.MonkeyPatch()
    mp.setenv("DAGSTER_HOME", str(new_dagster_home()))
    try:
        code = main(["build", "--raw-root", str(clean_root), "--data-root", str(tmp_path / "d")])
    finally:
        mp.undo()
    out = capsys.readouterr().out
    assert code == 0, out
    steps = re.findall(r"^\[(\d+)/(\d+)\] (\w+)  \d+\.\d s", out, flags=re.MULTILINE)
    assert steps[0][:2] == ("1", steps[0][1]) and steps[-1][0] == steps[-1][1]
    assert {"bronze_study", "silver_tables", "release", "warehouse_views"} <= {s[2] for s in steps}
    assert " - dagster - " not in out
    assert out.rstrip().splitlines()[-1].startswith("report: ")
    # a step's line ends with its own closing line, not with the line of the checks run in it
    # (the benchmark reads the silver step's seconds per source from it)
    silver = next(line for line in out.splitlines() if " silver_tables " in line)
    assert "by source: " in silver and "checks judged" not in out


def test_a_bronze_steps_parsing_line_becomes_parsing_progress_whatever_the_level():
    from pipelines.api.progress import translate
    from pipelines.ingest.incremental import parsing_message

    text = parsing_message("study", 2000, 14542)
    assert text == "study: parsing, 2000 of 14542 files parsed"
    record = logging.LogRecord("x", logging.DEBUG, "", 0, text, None, None)
    record.dagster_meta = {"orig_message": text, "step_key": "bronze_study"}
    progress, _ = translate(record)
    assert progress == Progress("parsing", "bronze_study", "study", 2000, 14542, text)
    other = logging.LogRecord("x", logging.DEBUG, "", 0, "study: 3 files (3 parsed)", None, None)
    other.dagster_meta = {"orig_message": other.msg, "step_key": "bronze_study"}
    assert translate(other)[0].kind == "message"
