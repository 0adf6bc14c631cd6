"""Cleaning distinct release texts: worker processes give exactly what one process gives, ids are
replaced before the redactor sees a text, and a text whose ids were replaced runs the detectors
its id-free version's gates pass (none: the redactor never sees it)."""

from __future__ import annotations

from collections import Counter

from pipelines.privacy.pseudonyms import IdReplacer
from pipelines.privacy.redact import KINDS, RedactionConfig
from pipelines.release.privatize.text_cleaner import clean_texts
from tests.pii_corpus import negative, positive

ALL = frozenset(KINDS)
REPLACER = IdReplacer({"u-17": "person_aaaa", "ana-3": "person_bbbb"})


def _corpus() -> list[str]:
    texts = [item["text"] for item in positive()]
    return texts + negative() + [f"u-17 wrote: {text}" for text in texts[:20]]


def _candidates(texts: list[str]) -> list[tuple[str, frozenset[str]]]:
    return [(t, ALL | ({"pseudonym"} if "u-17" in t else set())) for t in texts]


def test_worker_processes_clean_exactly_as_one_process() -> None:
    candidates = _candidates(_corpus())
    one = clean_texts(candidates, REPLACER, RedactionConfig())
    two = clean_texts(candidates, REPLACER, RedactionConfig(), workers=2, min_chars_for_workers=1)
    assert two == one
    assert sum(1 for text, (cleaned, _) in one.items() if cleaned != text) > 100


def test_ids_are_replaced_before_redaction_and_counted() -> None:
    cleaned, kinds = clean_texts(
        [("u-17 wrote from 10.0.0.1", frozenset({"pseudonym", "ip"}))], REPLACER, RedactionConfig()
    )["u-17 wrote from 10.0.0.1"]
    assert cleaned == "person_aaaa wrote from [IP]"
    assert kinds == Counter(pseudonym=1, ip=1)


def test_a_text_whose_ids_were_replaced_runs_the_detectors_its_id_free_text_passes(
    redactor_calls,
) -> None:
    # The gates saw the text before its ids were replaced; they passed only the id here.
    text = "ana-3: mail jane.doe@example.com"
    cleaned, kinds = clean_texts([(text, frozenset({"pseudonym"}))], REPLACER, RedactionConfig())[
        text
    ]
    assert cleaned == "person_bbbb: mail [EMAIL]" and kinds["email"] == 1
    assert redactor_calls.only == [frozenset({"email"})]


def test_a_text_whose_id_free_version_passes_no_gate_never_reaches_the_redactor(
    redactor_calls,
) -> None:
    texts = [
        ("study:ana-3#2", frozenset({"pseudonym", "phone"})),
        ("u-17", frozenset({"pseudonym"})),
    ]
    out = clean_texts(texts, REPLACER, RedactionConfig())
    assert out == {
        "study:ana-3#2": ("study:person_bbbb#2", {"pseudonym": 1}),
        "u-17": ("person_aaaa", {"pseudonym": 1}),
    }
    assert redactor_calls.texts == []


def test_a_text_without_ids_runs_only_the_detectors_its_gates_passed(redactor_calls) -> None:
    seen = redactor_calls.only
    clean_texts([("host 10.0.0.1", frozenset({"ip"}))], REPLACER, RedactionConfig())
    assert seen == [frozenset({"ip"})]


def test_the_same_id_free_text_is_redacted_once(redactor_calls) -> None:
    seen = redactor_calls.texts
    # Written by the subject, and the same words already pseudonymized upstream.
    texts = [
        ("u-17 at 10.0.0.1", frozenset({"pseudonym", "ip"})),
        ("person_aaaa at 10.0.0.1", frozenset({"ip"})),
    ]
    out = clean_texts(texts, REPLACER, RedactionConfig())
    assert seen == ["person_aaaa at 10.0.0.1"]
    assert out["u-17 at 10.0.0.1"] == ("person_aaaa at [IP]", Counter(pseudonym=1, ip=1))
    assert out["person_aaaa at 10.0.0.1"] == ("person_aaaa at [IP]", Counter(ip=1))


def test_worker_processes_start_at_the_characters_to_redact(monkeypatch) -> None:
    from pipelines.release.privatize import text_cleaner

    workers: list[int] = []
    real = text_cleaner._redact_all

    def spy(todo, redaction, n):
        workers.append(n)
        return real(todo, redaction, 1)

    monkeypatch.setattr(text_cleaner, "_redact_all", spy)
    texts = [("host 10.0.0.1", frozenset({"ip"})), ("ip 10.0.0.2", frozenset({"ip"}))]  # 24 chars
    for at_least in (25, 24):
        clean_texts(texts, REPLACER, RedactionConfig(), workers=2, min_chars_for_workers=at_least)
    assert workers == [1, 2]
