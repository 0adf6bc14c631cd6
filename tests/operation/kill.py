"""Shared by the kill tests (test_kill_build*.py: split in two files so that two test workers
share them): a build SIGKILLed at any write boundary leaves the previous tables, views and
releases readable and valid, and the next build completes with the same result as an
uninterrupted one.

Only the killed builds run as `turnlake build` processes (a process can only SIGKILL itself),
forked from one that has imported Dagster once (tests/forked.py); the builds that prepare the
world and the recovering builds call the same CLI entry point in this process."""

import hashlib
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from pipelines.checks.health import published_problems
from pipelines.cli.main import main
from pipelines.release.store.files import latest_release, read_manifest
from pipelines.release.store.verify import verify_release
from pipelines.schemas.silver import SILVER_MODELS
from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout
from tests.forked import ForkedTurnlake

# Every crash point of pipelines/runtime/faults.py but `release:before_rename`: a release killed
# there leaves the same abandoned temporary folder as at `release:after_datasets` (the next
# release removes both alike); tests/unit/test_release_files.py kills the release writer there.
# And `silver:before_record`, between a group's rows and its record, which leaves the group
# pending (stale) for the next build or run: tests/graph/test_silver_partition_runs.py stops a
# partition run there.
KILL_POINTS = [
    "ingest:before_log",
    "ingest:after_log",
    "silver:before_publish",
    "silver:between_groups",
    "silver:between_commits",
    "silver:after_publish",
    "views:before_swap",
    "release:after_datasets",
]


def build_args(raw: Path, data: Path) -> list[str]:
    return ["build", "--raw-root", str(raw), "--data-root", str(data), "--log-level", "ERROR"]


def killed_build(
    forks: ForkedTurnlake, raw: Path, data: Path, home: Path, kill_at: str
) -> subprocess.CompletedProcess:
    """`turnlake build` in a process of its own (forked: tests/forked.py), killed at `kill_at`."""
    env = {**os.environ, "DAGSTER_HOME": str(home), "TURNLAKE_KILL_AT": kill_at}
    return forks.run(build_args(raw, data), env=env, cwd=Path(__file__).parents[2])


def build(raw: Path, data: Path, home: Path) -> int:
    """`turnlake build` in this process; its exit code."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DAGSTER_HOME", str(home))
        for name in ("TURNLAKE_KILL_AT", "TURNLAKE_RAW_ROOT", "TURNLAKE_DATA_ROOT"):
            mp.delenv(name, raising=False)
        return main(build_args(raw, data))


def silver_digest(data: Path) -> dict[str, str]:
    """Content hash per silver table; quarantine's run_id (which run read the record) is left out
    because the data roots compared here were parsed by different runs."""
    layout = Layout(data)
    frames = {t: stored.read(layout, "silver", t) for t in SILVER_MODELS}
    frames["quarantine"] = frames["quarantine"].drop("run_id")
    return {t: _rows_digest(f) for t, f in frames.items()}


def _rows_digest(frame) -> str:
    """The rows as a multiset: a partitioned table is read partition by partition, and which
    partition a group lands in depends on the build that first saw it, not on the rows."""
    hashes = frame.hash_rows(seed=1).sort()
    return hashlib.sha256(hashes.to_numpy().tobytes() + str(frame.schema).encode()).hexdigest()


def published(data: Path) -> tuple[dict[str, str], str]:
    """The silver tables' digests and the latest release's content hash, once every published
    table, view and the latest release are checked to be valid."""
    layout = Layout(data)
    assert published_problems(layout) == []
    release = layout.exports / latest_release(layout.exports)
    assert verify_release(release) == []
    return silver_digest(data), read_manifest(release)["content_hash"]


def abandoned_releases(data: Path) -> list[str]:
    return [p.name for p in Layout(data).exports.iterdir() if p.name.startswith(".tmp-")]


def kill_then_recover(
    forks: ForkedTurnlake, world: tuple, data: Path, point: str
) -> tuple[dict[str, str], str]:
    """Kill a build of the grown raw data at `point` on a copy of the baseline: what it leaves is
    the old or the new publication, valid; what the next build publishes is returned."""
    raw_new, baseline, home, old, new = world
    shutil.copytree(baseline, data, symlinks=True)

    killed = killed_build(forks, raw_new, data, home, kill_at=point)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    silver, release = published(data)
    assert silver in (old[0], new[0]) and release in (old[1], new[1])

    assert build(raw_new, data, home) == 0
    assert abandoned_releases(data) == []
    return published(data)
