"""Pending partitions are cleaned in chunks that close at CHUNK_TEXTS candidate texts or at
CHUNK_BYTES of held rows, whichever comes first."""

from __future__ import annotations

import polars as pl
import pytest

from pipelines.privacy.redact import RedactionConfig
from pipelines.release.privatize import partitions as privatize_partitions
from pipelines.release.privatize.partitions import Pending, Privacy, privatize_all
from pipelines.release.privatize.privatize import Prepared

ROWS = pl.DataFrame({"text": ["x" * 100] * 10})  # 1 000 bytes of string data and offsets


@pytest.fixture
def cleaned_calls(monkeypatch) -> list[int]:
    """The number of candidate texts of each `cleaned_frame` call; each partition has 3 candidate
    texts and one dataset of ROWS."""
    calls: list[int] = []

    def prepare(datasets, ids, redaction, names):
        candidates = [(f"t{i}", frozenset({"phone"})) for i in range(3)]
        return Prepared({"sft": ROWS}, {}, candidates, names)

    def cleaned_frame(candidates, *args):
        calls.append(len(candidates))
        return pl.DataFrame()

    monkeypatch.setattr(privatize_partitions, "_built_rows", lambda root, p, held: ({}, None))
    monkeypatch.setattr(privatize_partitions, "prepare", prepare)
    monkeypatch.setattr(privatize_partitions, "cleaned_frame", cleaned_frame)
    monkeypatch.setattr(privatize_partitions, "_finish_and_save", lambda *args: ({}, {}))
    monkeypatch.setattr(privatize_partitions.part_cache, "save", lambda *args: None)
    return calls


def _run(partitions: int) -> None:
    pending = [Pending(f"p{i}", ("b", "p")) for i in range(partitions)]
    privacy = Privacy(b"k" * 32, "", RedactionConfig(), "", 1)
    assert [key for key, *_ in privatize_all(None, pending, [], privacy, {})] == [
        p.key for p in pending
    ]


def test_chunks_close_at_the_candidate_texts(monkeypatch, cleaned_calls) -> None:
    monkeypatch.setattr(privatize_partitions, "CHUNK_TEXTS", 6)
    _run(5)
    assert cleaned_calls == [6, 6, 3]  # 3 texts a partition: 2 + 2 + 1 partitions


def test_chunks_close_at_the_bytes_held(monkeypatch, cleaned_calls) -> None:
    monkeypatch.setattr(privatize_partitions, "CHUNK_BYTES", 2 * ROWS.estimated_size() + 1)
    _run(7)
    assert cleaned_calls == [9, 9, 3]  # 3 partitions pass the budget: 3 + 3 + 1 partitions
