"""One writer per data root."""

import subprocess
import time

import pytest

from pipelines.storage.lock import DataRootBusy, data_root_lock


def test_second_writer_gets_a_clear_busy_error_while_another_process_holds_the_root(
    tmp_path, lock_held_elsewhere
):
    lock_held_elsewhere(tmp_path)
    with pytest.raises(DataRootBusy, match="another turnlake build"), data_root_lock(tmp_path):
        pass


def test_waiting_writer_gets_the_lock_once_the_holder_dies(tmp_path, lock_held_elsewhere):
    holder = lock_held_elsewhere(tmp_path)
    start = time.monotonic()
    subprocess.Popen(["sh", "-c", f"sleep 0.5; kill -9 {holder.pid}"])
    with data_root_lock(tmp_path, wait_seconds=10):
        waited = time.monotonic() - start
    holder.wait()
    assert 0.3 < waited < 10


def test_lock_is_reentrant_within_one_process(tmp_path):
    with data_root_lock(tmp_path), data_root_lock(tmp_path):
        pass
    with data_root_lock(tmp_path):  # released completely afterwards
        pass
