"""Distinct candidate texts → pseudonymized, redacted texts and the replacements each took.

Subject ids are replaced first, in this process (one search over all texts, cheap). What the
redactor makes of the id-free text depends on that text and the redaction config alone, so it is
taken from the memo of earlier releases when it is there, and computed otherwise, in worker
processes when there are many texts (the redactor is Python: one core per process)."""

from __future__ import annotations

from collections.abc import Iterable

from pipelines.privacy.pseudonyms import IdReplacer
from pipelines.privacy.redact import RedactionConfig, Redactor
from pipelines.release.redaction_memo import RedactionMemo
from pipelines.runtime.workers import gives_back_freed_memory, worker_count, worker_pool

# Below this many texts to redact, one process is faster: a spawned worker costs 1–2 s of imports,
# what redacting ~20 000 candidate texts costs on the benchmark machine.
MIN_TEXTS_FOR_WORKERS = 20_000
_CHUNKS_PER_WORKER = 8  # several chunks per worker, so one slow chunk does not idle the others

Cleaned = tuple[
    str, dict[str, int]
]  # cleaned text, replacements by kind (kinds with none left out)


def clean_texts(
    candidates: Iterable[tuple[str, frozenset[str]]],
    replacer: IdReplacer,
    redaction: RedactionConfig,
    memo: RedactionMemo | None = None,
    workers: int = 1,
    min_texts_for_workers: int = MIN_TEXTS_FOR_WORKERS,
) -> dict[str, Cleaned]:
    """Each candidate text → (cleaned text, replacements by kind incl. `pseudonym`). A candidate
    comes with the detectors (and `pseudonym`) whose prefilter gate it passed: a text with no id
    runs only those (the gates are proven supersets), a text whose ids were replaced runs them all
    (the gates saw it before the replacement)."""
    candidates = list(candidates)
    with_ids = [text for text, possible in candidates if "pseudonym" in possible]
    id_free = dict(zip(with_ids, replacer.replace_many_counted(with_ids), strict=True))
    del with_ids
    prepared: list[tuple[str, str, int]] = []  # original, id-free text, ids replaced
    redacted: dict[str, Cleaned] = {}
    todo: dict[str, frozenset[str] | None] = {}  # id-free text -> detectors to run (None: all)
    for text, possible in candidates:
        if "pseudonym" in possible:
            free, n_ids = id_free[text]
            only: frozenset[str] | None = None
        else:
            free, n_ids, only = text, 0, possible
        prepared.append((text, free, n_ids))
        if free in redacted:
            continue
        remembered = memo.get(free) if memo is not None else None
        if remembered is not None:
            redacted[free] = remembered
        else:
            known = todo.get(free, frozenset())
            todo[free] = None if only is None or known is None else known | only
    fresh = _redact_all(
        list(todo.items()), redaction, worker_count(workers, len(todo), min_texts_for_workers)
    )
    for free, result in zip(todo, fresh, strict=True):
        redacted[free] = result
        if memo is not None:
            memo.put(free, *result)
    out: dict[str, Cleaned] = {}
    for text, free, n_ids in prepared:
        cleaned, kinds = redacted[free]
        out[text] = (cleaned, {**kinds, "pseudonym": n_ids}) if n_ids else (cleaned, kinds)
    return out


def _redact_all(
    todo: list[tuple[str, frozenset[str] | None]], redaction: RedactionConfig, workers: int
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
    redaction: RedactionConfig, chunk: list[tuple[str, frozenset[str] | None]]
) -> list[Cleaned]:
    redactor = _REDACTORS.get(repr(redaction))
    if redactor is None:
        redactor = _REDACTORS[repr(redaction)] = Redactor(redaction)
    return [
        (cleaned, dict(counts))
        for cleaned, counts in (redactor.redact(text, only) for text, only in chunk)
    ]
