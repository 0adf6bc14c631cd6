"""An in-process build gives back what each step freed, once per step."""

from __future__ import annotations

import dagster as dg

from pipelines.orchestration.memory import trims_after_each_step


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
