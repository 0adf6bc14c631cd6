"""A build SIGKILLed at the ingest and silver write boundaries leaves the previous tables, views and
releases readable and valid, and the next build completes with the same result as an
uninterrupted one (the later boundaries: test_kill_build_late.py; shared code: kill.py)."""

import pytest

from tests.operation.kill import (
    KILL_POINTS,
    kill_then_recover,
)

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("point", KILL_POINTS[:5])
def test_killed_build_leaves_valid_tables_and_next_build_completes(
    world, forked_turnlake, tmp_path, point
):
    new = world[4]  # what an uninterrupted build of the grown raw data publishes
    assert kill_then_recover(forked_turnlake, world, tmp_path / "data", point) == new
