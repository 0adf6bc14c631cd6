"""The check-digit, address and name kinds on a generated corpus (tests/pii_kinds_corpus.py): recall
per kind, look-alikes left alone by every kind (old and new), the generator's own check digits, and
the prefilter gates as supersets of the new detectors."""

from __future__ import annotations

from collections import Counter

import polars as pl
import pytest

from pipelines.privacy.prefilter import detector_gates
from pipelines.privacy.redact import RedactionConfig, Redactor
from tests.pii_kinds_corpus import (
    cf_check,
    dni_letter,
    iban_with_check,
    labelled,
    look_alikes,
    luhn_digit,
    nir_key,
    steuer_id_digit,
)

NEW_KINDS = ("card", "iban", "national_id", "address", "person")
CHECK_DIGIT_KINDS = ("card", "iban", "national_id")
REDACTOR = Redactor(RedactionConfig())


def _covered(text: str, value: str, kind: str) -> bool:
    """Whether one span of `kind` covers all of `value` in `text`."""
    start = text.find(value)
    end = start + len(value)
    return any(k == kind and a <= start and b >= end for a, b, k in REDACTOR.find(text))


def test_the_corpus_has_50_values_per_kind_and_500_look_alikes() -> None:
    counts = Counter(item.kind for item in labelled())
    assert all(counts[kind] >= 50 for kind in NEW_KINDS), counts
    assert len(look_alikes()) >= 500


@pytest.mark.parametrize("kind", NEW_KINDS)
def test_recall_on_the_generated_corpus(kind: str) -> None:
    items = [item for item in labelled() if item.kind == kind]
    missed = [item for item in items if not _covered(item.text, item.value, kind)]
    recall = 1 - len(missed) / len(items)
    print(f"\n{kind}: {len(items) - len(missed)}/{len(items)} found, recall {recall:.1%}")
    floor = 0.99 if kind in CHECK_DIGIT_KINDS else 0.90
    assert recall >= floor, [(m.value, m.text) for m in missed]


def test_look_alikes_are_left_alone_by_every_kind() -> None:
    texts = look_alikes()
    flagged = {t: [(t[a:b], k) for a, b, k in REDACTOR.find(t)] for t in texts}
    flagged = {t: f for t, f in flagged.items() if f}
    per_kind = Counter(k for found in flagged.values() for k in {k for _, k in found})
    share = len(flagged) / len(texts)
    print(
        f"\nlook-alikes: {len(texts)} sentences, {len(flagged)} ({share:.1%}) redacted by any "
        f"kind {dict(per_kind)}"
    )
    assert share <= 0.01, flagged


def test_new_kinds_left_out_of_a_sentence_where_they_are_disabled() -> None:
    text = "Hi Joel, card 4539 1488 0343 6467 to DE89 3704 0044 0532 0130 00."
    only_email = Redactor(RedactionConfig(kinds=frozenset({"email"})))
    assert only_email.redact(text)[0] == text
    out, counts = REDACTOR.redact(text)
    assert out == "Hi [PERSON], card [CARD] to [IBAN]."
    assert counts == Counter({"person": 1, "card": 1, "iban": 1})


@pytest.mark.parametrize(
    "text",
    [
        "4539 1488 0343 6468",  # one digit off: Luhn fails
        "USPS 9361 6565 6187 5236 3759 81",  # a valid card inside a longer grouped number
        "DE88 3704 0044 0532 0130 00",  # check digits off
        "SSN 000-12-3456",  # area 000 is never issued
        "ZZ 12 34 56 C is no NINO",  # ZZ is never issued
        "Order 86095742719 was sent",  # a valid Steuer-ID without a cue word
        "12345678A is not a DNI",  # wrong letter
    ],
)
def test_ids_that_fail_their_check_are_kept(text: str) -> None:
    assert [span for span in REDACTOR.find(text) if span[2] in NEW_KINDS] == []


def test_the_generator_check_digits_match_published_examples() -> None:
    # Examples printed by the issuers or the standards, checked by hand here (not by stdnum):
    # Visa's test card, the ISO 13616 example IBAN, the BZSt sample Steuer-ID, a NIR from INSEE's
    # documentation, the DNI of the Spanish ministry's example and the Agenzia's codice fiscale.
    assert luhn_digit("453914880343646") == "7"
    assert luhn_digit("411111111111111") == "1"
    assert iban_with_check("GB", "WEST12345698765432") == "GB82WEST12345698765432"
    assert iban_with_check("DE", "370400440532013000") == "DE89370400440532013000"
    assert steuer_id_digit("8609574271") == "9"
    assert nir_key("2550814168025") == "38"
    assert dni_letter(12345678) == "Z"
    assert cf_check("RSSMRA85T10A562") == "S"


def test_gates_cover_every_new_span_in_the_corpus() -> None:
    texts = [item.text for item in labelled()] + look_alikes()
    gates = detector_gates(pl.col("value"), [], RedactionConfig())
    passed = pl.DataFrame({"value": texts}).select("value", *(gates[k].alias(k) for k in NEW_KINDS))
    problems = [
        (row["value"], kind)
        for row in passed.iter_rows(named=True)
        for kind in NEW_KINDS
        if REDACTOR.redact(row["value"], only=[kind])[1] and not row[kind]
    ]
    assert problems == []
