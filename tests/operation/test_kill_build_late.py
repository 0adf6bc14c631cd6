"""A build SIGKILLed at the later write boundaries (after silver, views, release) or during the
first build of a data root leaves nothing half published, and the next build completes
(test_kill_build.py has the earlier boundaries; shared code: kill.py)."""

import signal

import pytest

from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout
from tests.operation.kill import (
    KILL_POINTS,
    build,
    kill_then_recover,
    killed_build,
    published,
)

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("point", KILL_POINTS[5:])
def test_killed_build_leaves_valid_tables_and_next_build_completes(
    world, forked_turnlake, tmp_path, point
):
    new = world[4]  # what an uninterrupted build of the grown raw data publishes
    assert kill_then_recover(forked_turnlake, world, tmp_path / "data", point) == new


def test_first_build_killed_leaves_nothing_half_published_and_rebuild_completes(
    world, forked_turnlake, tmp_path
):
    raw_new, _, home, _, (new_silver, _) = world
    data = tmp_path / "data"
    killed = killed_build(forked_turnlake, raw_new, data, home, "silver:before_publish")
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    assert stored.snapshot(Layout(data), "silver") is None
    assert build(raw_new, data, home) == 0
    # A new data root generates its own pseudonym key: its release differs, its silver does not.
    assert published(data)[0] == new_silver
