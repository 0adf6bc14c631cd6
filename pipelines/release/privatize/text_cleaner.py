"""Distinct candidate texts → pseudonymized, redacted texts and the replacements each took.

Subject ids are replaced first, in this process (one search over all texts, cheap), and the id-free
texts gated again (pipelines/privacy/prefilter.py). Each distinct id-free text is redacted once, in
worker processes when there are many texts (the redactor's confirming step is Python: one core per
process)."""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

from pipelines.privacy.prefilter import gated
from pipelines.privacy.pseudonyms import IdReplacer
from pipelines.privacy.redact import RedactionConfig, Redactor
from pipelines.runtime.workers import gives_back_freed_memory, worker_count, worker_pool

# Candidate texts worth gathering for one `clean_texts` call: the unit privatize.py slices the
# texts it cleans by (which texts reach workers is MIN_CHARS_FOR_WORKERS).
TEXTS_PER_GATHERING = 20_000
# Below this many characters to redact, one process is faster: a spawned worker costs 1–2 s of
# imports, what redacting ~2 MB of the texts the prefilter passes costs on the benchmark machine
# (0.7–2.7 MB/s since libphonenumber runs on candidate runs alone, faster where runs repeat).
MIN_CHARS_FOR_WORKERS = 2_000_000
_CHUNKS_PER_WORKER = 8  # several chunks per worker, so one slow chunk does not idle the others

Cleaned = tuple[
    str, dict[str, int]
]  # cleaned text, replacements by kind (kinds with none left out)


def clean_texts(
    candidates: Iterable[tuple[str, frozenset[str]]],
    replacer: IdReplacer,
    redaction: RedactionConfig,
    workers: int = 1,
    min_chars_for_workers: int = MIN_CHARS_FOR_WORKERS,
) -> dict[str, Cleaned]:
    """Each candidate text → (cleaned text, replacements by kind incl. `pseudonym`). A candidate
    comes with the detectors (and `pseudonym`) whose prefilter gate it passed: a text with no id
    runs only those (the gates are proven supersets), a text that may hold an id runs those its
    id-free version passes (the gates saw it before the replacement), none when it passes none."""
    candidates = list(candidates)
    id_free, free_gates = _id_free(candidates, replacer, redaction)
    prepared: list[tuple[str, str, int]] = []  # original, id-free text, ids replaced
    redacted: dict[str, Cleaned] = {}
    todo: dict[str, frozenset[str]] = {}  # id-free text -> detectors to run
    for text, possible in candidates:
        if "pseudonym" in possible:
            free, n_ids = id_free[text]
            only = free_gates.get(free, frozenset())
        else:
            free, n_ids, only = text, 0, possible
        prepared.append((text, free, n_ids))
        if free in redacted:
            continue
        if not only and free not in todo:
            redacted[free] = (free, {})  # no detector can find a span in it
            continue
        todo[free] = todo.get(free, frozenset()) | only
    chars = sum(map(len, todo))
    fresh = _redact_all(
        list(todo.items()), redaction, worker_count(workers, chars, min_chars_for_workers)
    )
    for free, result in zip(todo, fresh, strict=True):
        redacted[free] = result
    out: dict[str, Cleaned] = {}
    for text, free, n_ids in prepared:
        cleaned, kinds = redacted[free]
        out[text] = (cleaned, {**kinds, "pseudonym": n_ids}) if n_ids else (cleaned, kinds)
    return out


def _id_free(
    candidates: list[tuple[str, frozenset[str]]], replacer: IdReplacer, redaction: RedactionConfig
) -> tuple[dict[str, tuple[str, int]], dict[str, frozenset[str]]]:
    """Each candidate that may hold an id → (its id-free text, ids replaced), and each id-free text
    some detector's gate passes → the detectors it passes."""
    with_ids = [text for text, possible in candidates if "pseudonym" in possible]
    id_free = dict(zip(with_ids, replacer.replace_many_counted(with_ids), strict=True))
    free = pl.Series([text for text, _ in id_free.values()], dtype=pl.String).unique()
    return id_free, dict(gated(free, [], redaction))


def _redact_all(
    todo: list[tuple[str, frozenset[str]]], redaction: RedactionConfig, workers: int
) -> list[Cleaned]:
    if workers == 1:
        return _redact_chunk(redaction, todo)
    size = max(1, -(-len(todo) // (workers * _CHUNKS_PER_WORKER)))
    chunks = [todo[i : i + size] for i in range(0, len(todo), size)]
    pool = worker_pool(workers)
    return [
        result
        for chunk in pool.map(_redact_chunk, [redaction] * len(chunks), chunks)
        for result in chunk
    ]


_REDACTORS: dict[str, Redactor] = {}  # per process: compiling a Redactor's patterns once per config


@gives_back_freed_memory
def _redact_chunk(
    redaction: RedactionConfig, chunk: list[tuple[str, frozenset[str]]]
) -> list[Cleaned]:
    redactor = _REDACTORS.get(repr(redaction))
    if redactor is None:
        redactor = _REDACTORS[repr(redaction)] = Redactor(redaction)
    return [(cleaned, dict(counts)) for cleaned, counts in redactor.redact_many(chunk)]
