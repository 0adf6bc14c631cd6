"""Who asks a run to judge every partition again: its tag, the environment, or the step judging
inside `revalidating`; asking never changes the environment."""

from __future__ import annotations

import os

from pipelines.checks.revalidate import (
    REVALIDATE_ENV,
    REVALIDATE_TAG,
    revalidate_requested,
    revalidate_tag,
    revalidating,
)


def test_the_run_tag_asks_for_it_and_other_values_do_not(monkeypatch):
    monkeypatch.delenv(REVALIDATE_ENV, raising=False)
    assert revalidate_requested({REVALIDATE_TAG: "true"})
    assert revalidate_requested({REVALIDATE_TAG: " Yes "})
    assert not revalidate_requested({REVALIDATE_TAG: "false"})
    assert not revalidate_requested({"turnlake/data_root": "true"})
    assert not revalidate_requested()


def test_the_flag_becomes_the_tag_only_when_set():
    assert revalidate_tag(True) == {"turnlake/revalidate": "true"}
    assert revalidate_tag(False) == {}


def test_the_environment_still_asks_for_it(monkeypatch):
    monkeypatch.setenv(REVALIDATE_ENV, "1")
    assert revalidate_requested({})


def test_revalidating_holds_inside_the_block_only_and_leaves_the_environment(monkeypatch):
    monkeypatch.delenv(REVALIDATE_ENV, raising=False)
    before = dict(os.environ)
    with revalidating(True):
        assert revalidate_requested()
        with revalidating(False):
            assert not revalidate_requested()
        assert revalidate_requested()
        assert dict(os.environ) == before
    assert not revalidate_requested()
