"""The run lease: a multiprocess run holds the data root once for the whole run; its own steps
(processes that joined its token) go on under it, anyone else finds the root busy."""

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from pipelines.storage.layout import Layout
from pipelines.storage.lock import DataRootBusy, data_root_lock, join_run_lease

HOLD_LEASE = (
    "import sys, time; from pathlib import Path\n"
    "from pipelines.storage.layout import Layout\n"
    "from pipelines.storage.lock import run_lease\n"
    "with run_lease(Layout(Path(sys.argv[1])), sys.argv[2]):\n"
    "    print('held', flush=True); time.sleep(600)\n"
)


@pytest.fixture
def lease_held_elsewhere(tmp_path):
    """A process holding `tmp_path`'s run lease under token `run-a`."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD_LEASE, str(tmp_path), "run-a"],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert proc.stdout.readline().strip() == "held"
    yield proc
    proc.kill()
    proc.wait()
    join_run_lease(None)


def test_a_step_of_the_leased_run_writes_while_the_run_holds_the_root(
    tmp_path, lease_held_elsewhere
):
    join_run_lease("run-a")
    with data_root_lock(Layout(tmp_path)):  # no wait: it does not wait for its own run
        pass


@pytest.mark.parametrize("joined", [None, "run-b"])
def test_anyone_else_finds_the_root_busy_for_the_whole_run(tmp_path, lease_held_elsewhere, joined):
    join_run_lease(joined)
    busy = pytest.raises(DataRootBusy, match="another turnlake build")
    with busy, data_root_lock(Layout(tmp_path), wait=0.5):
        pass


def test_a_lease_does_not_outlive_its_run(tmp_path, lease_held_elsewhere):
    lease_held_elsewhere.send_signal(signal.SIGKILL)
    lease_held_elsewhere.wait(timeout=10)
    join_run_lease("run-b")  # another run: the dead run's lease file holds nothing
    with data_root_lock(Layout(tmp_path)):
        pass


def test_steps_of_the_leased_run_write_one_at_a_time(tmp_path, lease_held_elsewhere):
    step = (
        "import sys, time; from pathlib import Path\n"
        "from pipelines.storage.layout import Layout\n"
        "from pipelines.storage.lock import data_root_lock, join_run_lease\n"
        "join_run_lease('run-a')\n"
        "with data_root_lock(Layout(Path(sys.argv[1]))):\n"
        "    print('writing', flush=True); time.sleep(600)\n"
    )
    other_step = subprocess.Popen(
        [sys.executable, "-c", step, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert other_step.stdout.readline().strip() == "writing"
        join_run_lease("run-a")
        with pytest.raises(DataRootBusy), data_root_lock(Layout(tmp_path), wait=0.5):
            pass
    finally:
        other_step.kill()
        other_step.wait()


def test_build_refuses_fewer_than_one_worker_before_touching_anything(tmp_path):
    import turnlake

    with pytest.raises(ValueError, match="workers must be a whole number >= 1, got 0"):
        turnlake.build(raw_root=tmp_path / "raw", data_root=tmp_path / "data", workers=0)
    assert not (tmp_path / "data").exists()
