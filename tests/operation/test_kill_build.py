"""A build SIGKILLed at any write boundary leaves the previous tables and views readable and
valid, and the next build completes with the same result as an uninterrupted one."""

import hashlib
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from pipelines.checks.health import published_problems
from pipelines.demo import write_demo
from pipelines.schemas.silver import SILVER_MODELS
from pipelines.storage.layout import Layout

KILL_POINTS = [
    "ingest:before_log",
    "ingest:after_log",
    "silver:before_publish",
    "silver:after_publish",
    "views:before_swap",
]


def build(
    raw: Path, data: Path, home: Path, kill_at: str | None = None
) -> subprocess.CompletedProcess:
    env = {**os.environ, "DAGSTER_HOME": str(home)}
    env.pop("TURNLAKE_KILL_AT", None)
    if kill_at:
        env["TURNLAKE_KILL_AT"] = kill_at
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pipelines.cli.main",
            "build",
            "--raw-root",
            str(raw),
            "--data-root",
            str(data),
            "--log-level",
            "ERROR",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=Path(__file__).parents[2],
        check=False,
    )


def silver_digest(data: Path) -> dict[str, str]:
    """Content hash per silver table; quarantine's run_id (which run read the record) is left out
    because the data roots compared here were parsed by different runs."""
    layout = Layout(data)
    frames = {t: pl.read_parquet(layout.silver(t)) for t in SILVER_MODELS}
    frames["quarantine"] = frames["quarantine"].drop("run_id")
    return {t: hashlib.sha256(f.write_ipc(None).getvalue()).hexdigest() for t, f in frames.items()}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A data root built from demo data, and raw data that has grown since (new and appended files)."""
    root = tmp_path_factory.mktemp("kill")
    raw_old, raw_new = root / "raw_old", root / "raw_new"
    write_demo(raw_old, scale=1, seed=3)
    shutil.copytree(raw_old, raw_new)
    write_demo(root / "more", scale=1, seed=4)
    for path in (root / "more" / "dialogues").rglob("*.jsonl"):
        target = raw_new / "dialogues" / "grown" / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, target)
    master = raw_new / "survey_responses" / "conversations" / "all_conversations.jsonl"
    master.write_bytes(master.read_bytes() + b"\n")
    home = root / "home"
    home.mkdir()
    baseline = root / "baseline"
    assert build(raw_old, baseline, home).returncode == 0
    reference = root / "reference"
    assert build(raw_new, reference, home).returncode == 0
    return raw_new, baseline, home, silver_digest(baseline), silver_digest(reference)


@pytest.mark.parametrize("point", KILL_POINTS)
def test_killed_build_leaves_valid_tables_and_next_build_completes(world, tmp_path, point):
    raw_new, baseline, home, old_digest, new_digest = world
    data = tmp_path / "data"
    shutil.copytree(baseline, data, symlinks=True)

    killed = build(raw_new, data, home, kill_at=point)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    assert published_problems(Layout(data)) == []
    assert silver_digest(data) in (old_digest, new_digest)

    rebuilt = build(raw_new, data, home)
    assert rebuilt.returncode == 0, rebuilt.stderr[-2000:]
    assert published_problems(Layout(data)) == []
    assert silver_digest(data) == new_digest


def test_first_build_killed_leaves_nothing_half_published_and_rebuild_completes(world, tmp_path):
    raw_new, _, home, _, new_digest = world
    data = tmp_path / "data"
    assert build(raw_new, data, home, kill_at="silver:before_publish").returncode == -signal.SIGKILL
    assert not Layout(data).silver_link.exists()
    assert build(raw_new, data, home).returncode == 0
    assert silver_digest(data) == new_digest
