"""The cyclic collector is paused inside, and left as it was after (also after an error)."""

from __future__ import annotations

import gc

import pytest

from pipelines.ingest import tasks
from pipelines.runtime.collector import cyclic_gc_paused, without_cyclic_gc


def test_paused_inside_and_enabled_again_after_an_error() -> None:
    assert gc.isenabled()
    with pytest.raises(ValueError), cyclic_gc_paused():
        assert not gc.isenabled()
        raise ValueError("boom")
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off() -> None:
    gc.disable()
    try:
        with cyclic_gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_decorated_function_runs_paused_and_keeps_its_name() -> None:
    @without_cyclic_gc
    def seen() -> bool:
        return gc.isenabled()

    assert seen() is False
    assert gc.isenabled()
    assert seen.__name__ == "seen"


def test_ingest_parses_with_the_collector_paused_and_workers_can_pickle_it() -> None:
    import pickle

    assert tasks.write_in_batches.__wrapped__ is not None
    assert pickle.loads(pickle.dumps(tasks._parse_chunk)) is tasks._parse_chunk


def test_the_console_script_starts_first_generation_passes_less_often() -> None:
    from pipelines.cli.entry import main

    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 7, 9)
        assert main(["--help"]) == 0
        assert gc.get_threshold() == (50_000, 7, 9)  # the older generations' as they were
    finally:
        gc.set_threshold(*before)


def test_privatization_cleans_its_candidate_texts_with_the_collector_paused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pipelines.privacy.redact import RedactionConfig
    from pipelines.release.privatize import privatize

    seen: list[bool] = []

    def clean_texts(batch, *_):  # type: ignore[no-untyped-def]
        seen.append(gc.isenabled())
        return {text: (text, {}) for text, _ in batch}

    monkeypatch.setattr(privatize, "clean_texts", clean_texts)
    candidates = [("a text", frozenset({"person"}))]
    frame = privatize.cleaned_frame(
        candidates, privatize.id_replacer(b"k" * 32, ()), RedactionConfig(), 1
    )
    assert seen == [False]
    assert frame.get_column("value").to_list() == ["a text"]
    assert gc.isenabled()
