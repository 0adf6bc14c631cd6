"""One writer per data root, checked with real processes holding the lock."""

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipelines.storage.layout import Layout
from pipelines.storage.lock import DataRootBusy, data_root_lock


def test_a_second_writer_waits_for_the_holder_and_then_gets_the_lock(tmp_path, lock_held_elsewhere):
    holder = lock_held_elsewhere(tmp_path, seconds=1.5)  # exits by itself, releasing the lock
    start = time.monotonic()
    with data_root_lock(Layout(tmp_path), wait=30):
        waited = time.monotonic() - start
    assert holder.wait(timeout=10) == 0
    assert 0.8 < waited < 30


def test_a_writer_that_waits_in_vain_gets_data_root_busy_naming_the_holder(
    tmp_path, lock_held_elsewhere
):
    holder = lock_held_elsewhere(tmp_path)
    start = time.monotonic()
    with (
        pytest.raises(DataRootBusy, match=rf"another turnlake build .*\(pid {holder.pid} since "),
        data_root_lock(Layout(tmp_path), wait=0.6),
    ):
        pass
    assert time.monotonic() - start >= 0.6


def test_the_lock_is_released_when_its_holder_is_killed(tmp_path, lock_held_elsewhere):
    holder = lock_held_elsewhere(tmp_path)
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=10)
    with data_root_lock(Layout(tmp_path)):  # no wait: a dead holder holds nothing
        pass


def test_lock_is_reentrant_within_one_process(tmp_path, lock_held_elsewhere):
    with data_root_lock(Layout(tmp_path)), data_root_lock(Layout(tmp_path)):
        pass
    with data_root_lock(Layout(tmp_path)):  # released completely afterwards
        pass
    holder = lock_held_elsewhere(tmp_path)  # ... so another process can take it now
    assert holder.poll() is None


MATERIALIZE_BRONZE = """
import sys
import dagster as dg
from assets.bronze import BRONZE_ASSETS
from pipelines.orchestration.resources import TurnlakeResource
resources = {"turnlake": TurnlakeResource(raw_root=sys.argv[1], data_root=sys.argv[2])}
sys.exit(0 if dg.materialize(BRONZE_ASSETS[:1], resources=resources).success else 1)
"""


def _materialize_in_its_own_process(raw, data) -> subprocess.Popen:
    """A `dg.materialize` of a writing asset; returns once its step has started."""
    proc = subprocess.Popen(
        [sys.executable, "-c", MATERIALIZE_BRONZE, str(raw), str(data)],
        cwd=Path(__file__).resolve().parents[2],
        stderr=subprocess.PIPE,
        text=True,
    )
    for line in proc.stderr:
        if "STEP_START" in line:
            return proc
    raise AssertionError(f"the run ended before its step started (exit {proc.wait()})")


def test_two_materialize_calls_on_one_busy_data_root_wait_and_then_both_succeed(
    tmp_path, lock_held_elsewhere
):
    """Steps that find the data root busy wait for it ([lock] wait_seconds) instead of failing;
    both runs then take it one after the other."""
    raw, data = tmp_path / "raw", tmp_path / "data"
    raw.mkdir()
    holder = lock_held_elsewhere(data)
    runs = [_materialize_in_its_own_process(raw, data) for _ in range(2)]
    time.sleep(0.5)
    assert [run.poll() for run in runs] == [None, None]  # both waiting, neither failed
    holder.kill()
    for run in runs:
        _, stderr = run.communicate(timeout=120)
        assert run.returncode == 0, stderr[-2000:]


def test_a_step_records_what_its_checks_passed_only_while_holding_the_data_root(
    tmp_path, lock_held_elsewhere, monkeypatch
):
    # Recording publishes a new snapshot of the layer from the one it reads: done while another
    # writer holds the root, it could replace a snapshot that writer publishes meanwhile.
    from types import SimpleNamespace

    from pipelines.checks import factory, passes
    from pipelines.checks.verdicts import Verdict

    class Check:
        name = "c"

        def judge(self, settings) -> Verdict:
            return Verdict(True, {})

    recorded = []
    monkeypatch.setattr(factory, "_checks_of", lambda step: (Check(),))
    monkeypatch.setattr(passes, "remember", lambda *args: recorded.append(args))
    lock_held_elsewhere(tmp_path)
    settings = SimpleNamespace(data_root=tmp_path, lock_wait_seconds=0.3)
    with pytest.raises(DataRootBusy):
        factory.judge_step("step", settings)  # type: ignore[arg-type]
    assert recorded == []
    with data_root_lock(Layout(tmp_path / "free")):
        pass
    factory.judge_step("step", SimpleNamespace(data_root=tmp_path / "free", lock_wait_seconds=0.3))  # type: ignore[arg-type]
    assert len(recorded) == 1
