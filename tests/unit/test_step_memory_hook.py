"""An in-process build gives back what each step freed, once per step, and lets go of what the
build's lock would keep for later steps."""

from __future__ import annotations

import dagster as dg

from pipelines.orchestration.memory import trims_after_each_step
from pipelines.storage import delta_cache


@dg.op
def _first() -> int:
    return 1


@dg.op
def _second(value: int) -> int:
    return value + 1


@dg.job
def _two_steps() -> None:
    _second(_first())


def test_each_step_of_a_job_with_the_hook_trims_once(monkeypatch):
    trims = []
    monkeypatch.setattr("pipelines.orchestration.memory.trim_malloc", lambda: trims.append(1))
    result = _two_steps.with_hooks({trims_after_each_step}).execute_in_process()
    assert result.success
    assert len(trims) == 2


def test_each_step_lets_go_of_the_delta_versions_it_read_once(tmp_path):
    reads = []

    def read() -> int:
        reads.append(1)
        return len(reads)

    @dg.op
    def _reads() -> int:
        return delta_cache.read_once(str(tmp_path / "log"), 0, read)

    @dg.job
    def _reading_twice() -> None:
        _reads.alias("first")()
        _reads.alias("second")()

    with delta_cache.held():  # as the build's data-root lock holds it from first step to last
        result = _reading_twice.with_hooks({trims_after_each_step}).execute_in_process()
        assert result.success
        assert len(reads) == 2
