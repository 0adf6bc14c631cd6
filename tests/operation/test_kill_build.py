"""A build SIGKILLed at the ingest and silver write boundaries leaves the previous tables, views and
releases readable and valid, and the next build completes with the same result as an
uninterrupted one (the later boundaries: test_kill_build_late.py; shared code: kill.py)."""

import shutil
import signal

import pytest

from tests.operation.kill import (
    KILL_POINTS,
    abandoned_releases,
    build,
    killed_build,
    published,
)

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("point", KILL_POINTS[:4])
def test_killed_build_leaves_valid_tables_and_next_build_completes(world, tmp_path, point):
    raw_new, baseline, home, old, new = world
    data = tmp_path / "data"
    shutil.copytree(baseline, data, symlinks=True)

    killed = killed_build(raw_new, data, home, kill_at=point)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    silver, release = published(data)
    assert silver in (old[0], new[0]) and release in (old[1], new[1])

    assert build(raw_new, data, home) == 0
    assert published(data) == new
    assert abandoned_releases(data) == []
