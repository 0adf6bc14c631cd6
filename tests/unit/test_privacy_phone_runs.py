"""libphonenumber on candidate runs (found by Rust regex in Polars) finds exactly what it finds on
whole texts: the same kept phones on the PII corpus, on generated text and on JSON-like text full of
numbers; the runs Rust finds are the ones Python's gate keeps; and a text with so many numbers that
the matcher gives up is still matched whole, so it gives up as before."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pipelines.privacy.redact as redact_module
from pipelines.privacy.patterns import phone_windows
from pipelines.privacy.redact import RedactionConfig, Redactor, phone_runs
from tests.pii_corpus import negative, org_names, positive
from tests.unit.test_privacy_prefilter import PHONE_TEXTS, TEXTS

CONFIG = RedactionConfig(org_names=org_names())


def _json_texts(n: int) -> list[str]:
    """Decision-context-like JSON: floats, ids, timestamps and a phone now and then (the texts
    where most runs with 7 digits are not phones)."""
    rng = random.Random(7)
    texts = []
    for i in range(n):
        record = {
            "score": rng.random(),
            "id": f"{rng.getrandbits(64):016x}",
            "ts": 1767943131 + i,
            "count": rng.randrange(10**9),
            "note": rng.choice(["", "call 555-123-4567", "tel: +44 20 7946 0958", "v3.11.2"]),
        }
        texts.append(json.dumps(record))
    return texts


def _corpus() -> list[str]:
    return [item["text"] for item in positive()] + negative() + _json_texts(200)


def _whole_text_phones(texts: list[str]) -> list[list[tuple[int, int, str]]]:
    """The phones the redactor keeps when libphonenumber runs on each whole text."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(redact_module, "_may_run_out_of_tries", lambda text: True)
        return [sorted(Redactor(CONFIG)._phones(t)) for t in texts]


def _run_phones(texts: list[str]) -> list[list[tuple[int, int, str]]]:
    """The phones it keeps with the runs found in Polars (as `redact_many` finds them)."""
    redactor = Redactor(CONFIG)
    return [sorted(redactor._phones(t, runs)) for t, runs in zip(texts, phone_runs(texts))]


def test_runs_give_the_phones_of_whole_texts_on_the_corpus() -> None:
    texts = _corpus()
    expected = _whole_text_phones(texts)
    assert sum(map(len, expected)) > 50  # the corpus holds phones to find
    assert _run_phones(texts) == expected


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(PHONE_TEXTS, TEXTS), min_size=1, max_size=20))
def test_runs_give_the_phones_of_whole_texts_on_generated_text(texts: list[str]) -> None:
    assert _run_phones(texts) == _whole_text_phones(texts)


def _located(texts: list[str]) -> list[list[tuple[int, int]]]:
    return [list(redact_module._located(t, runs)) for t, (runs, _) in zip(texts, phone_runs(texts))]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(PHONE_TEXTS, TEXTS), min_size=1, max_size=20))
def test_runs_found_in_rust_are_the_windows_python_keeps(texts: list[str]) -> None:
    assert _located(texts) == [list(phone_windows(t)) for t in texts]


def test_runs_found_in_rust_are_the_windows_python_keeps_on_the_corpus() -> None:
    texts = _corpus()
    windows = [list(phone_windows(t)) for t in texts]
    assert sum(map(len, windows)) > 200
    assert _located(texts) == windows


def test_redact_many_equals_redact_text_by_text() -> None:
    texts = _corpus()
    items = [(t, None) for t in texts] + [(t, ["phone"]) for t in texts]
    expected = [Redactor(CONFIG).redact(t, only) for t, only in items]
    assert Redactor(CONFIG).redact_many(items) == expected


def test_a_text_where_the_matcher_gives_up_is_matched_whole() -> None:
    # 66,000 one-digit candidates, each a failed try: libphonenumber stops after 65,535 of them
    # and never reaches the phone at the end, so the redactor leaves it, as it always did.
    text = "1b" * 66_000 + " call +1 555 123 4567"
    assert phone_runs([text])[0][1]  # the bound says the matcher may run out
    one_region = Redactor(RedactionConfig(phone_regions=["US"]))
    assert one_region.redact_many([(text, None)]) == [(text, {})]
