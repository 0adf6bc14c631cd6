"""The Polars prefilter gates are supersets of what the redactor and the id replacer can change,
the phone gate in front of libphonenumber never drops a phone the redactor would keep, and
cleaning only the gated texts gives what every detector on every text gives."""

from __future__ import annotations

import re
from collections import Counter

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pipelines.privacy.redact as redact_module
from pipelines.config.redaction import TEXT_KINDS
from pipelines.privacy.patterns import may_hold_phone
from pipelines.privacy.prefilter import (
    _KEEPABLE_PHONE,
    any_gate,
    caseless,
    detector_gates,
    gated,
    id_gated,
)
from pipelines.privacy.pseudonyms import IdReplacer
from pipelines.privacy.redact import KINDS, RedactionConfig, Redactor
from pipelines.release.privatize.text_cleaner import clean_texts
from tests.pii_corpus import negative, org_names, positive

IDS = ["5ed9dc4f-6630-4cc5-8619-10584891a2ab", "u-7", "user-ana"]
CONFIG = RedactionConfig(org_names=org_names())
REDACTOR = Redactor(CONFIG)
REPLACER = IdReplacer({i: f"person_{n}" for n, i in enumerate(IDS)})
# Characters where Python and Rust disagree on case, digits, spaces or word characters.
TRICKY = "İıſKk²①٣\u0301\u00a0\u202f\x1c\u2012‿"
ALPHABET = st.sampled_from(
    list("abcdeikstxyzABCKSX0123456789 .,:;/-_+()[]@#$€%=?&\n\t'\"") + list(TRICKY)
)
PIECES = st.sampled_from(
    [
        "https://",
        "www.",
        "token=",
        "Bearer ",
        "api_key: ",
        "@example.com",
        "+1 (555) 123-4567",
        "555.123.4567",
        "10.0.0.1",
        "fe80::1",
        "$1,200",
        "12k",
        "revenue",
        "USD 12",
        "3 million",
        "call ",
        "tel: ",
        "Acme",
        "ACME Corp",
        *IDS,
        "2025-01-02",
        "1767943131",
        "SCENARIO-2025-167#9",
        "12 dollars",
        "3 million euros",
        "5k bucks",
        " mio. ",
        "\u2003trillion\x1fyen",
        "4.5 cents",
        "percent",
        "abcdefgh12345678",
        # the check-digit, address and name kinds (tests/unit/test_privacy_pii_kinds.py)
        "4539 1488 0343 6467",
        "3782-822463-10005",
        "DE89 3704 0044 0532 0130 00",
        "GB29NWBK60161331926819",
        "536-90-4399",
        "SSN ",
        "Steuer-ID ",
        "86095742719",
        "JG 10 37 59 A",
        "2 55 08 14 168 025 38",
        "12345678Z",
        "RSSMRA85T10A562S",
        "Hi ",
        "my name is ",
        "Thanks, ",
        "Joel",
        "Łukasz O'Neill",
        "221B Baker Street",
        " London NW1 6XE",
        "Hauptstraße 5",
        "12 rue de la Paix",
        ", 75002 Paris",
    ]
)
TEXTS = st.lists(st.one_of(ALPHABET, PIECES), max_size=30).map("".join)


def _corpus() -> list[str]:
    return [item["text"] for item in positive()] + negative()


def _gates(texts: list[str]) -> pl.DataFrame:
    gates = detector_gates(pl.col("value"), IDS, CONFIG)
    return pl.DataFrame({"value": texts}, schema={"value": pl.String}).select(
        "value", *(g.alias(k) for k, g in gates.items())
    )


def _unexplained(texts: list[str]) -> list[tuple[str, str]]:
    """(text, kind) where a detector or the id replacer changes text its gate said it could not."""
    problems = []
    for row in _gates(texts).iter_rows(named=True):
        text = row["value"]
        if REPLACER.replace_counted(text)[1] and not row["pseudonym"]:
            problems.append((text, "pseudonym"))
        for kind in KINDS:
            if REDACTOR.redact(text, only=[kind])[1] and not row[kind]:
                problems.append((text, kind))
    return problems


def test_corpus_has_every_kind_so_the_superset_test_means_something() -> None:
    found = {kind for text in _corpus() for kind in REDACTOR.redact(text)[1]}
    assert found == set(TEXT_KINDS)


def test_gates_cover_every_span_in_the_pii_corpus() -> None:
    assert _unexplained(_corpus()) == []


@settings(max_examples=400, deadline=None)
@given(st.lists(TEXTS, min_size=1, max_size=20))
def test_gates_cover_every_span_in_generated_text(texts: list[str]) -> None:
    assert _unexplained(texts) == []


@pytest.mark.parametrize(
    "text",
    [
        "paid 3 mio. dollars",
        "2 mrd. euros",
        "5 trillion yen",
        "12k bucks",
        "7\u2003million rupees",
        "40 francs",
        "99 cents",
        "3\x1cthousand pounds sterling",
    ],
)
def test_money_gate_covers_amounts_with_a_currency_word_after_any_magnitude(text: str) -> None:
    assert REDACTOR.redact(text, only=["money"])[1]["money"] == 1
    assert _unexplained([text]) == []


def test_gates_leave_plain_text_out() -> None:
    passed = _gates(
        ["The crew reached the ridge before noon.", "Route 45 was closed in 2024."]
    ).drop("value")
    assert not any(any(row) for row in passed.iter_rows())


@pytest.mark.parametrize(
    "text", ["SCENARIO-2025-167#9", "3176645dd3f0265ed27f", "x_1767943131#6", "bd.1234567"]
)
def test_phone_gate_rules_out_glued_digit_runs(text: str) -> None:
    assert not may_hold_phone(text)


@pytest.mark.parametrize(
    "text", ["call 5551234567", "+49 151 1234 5678", "(555) 123-4567", "x 1234567"]
)
def test_phone_gate_keeps_free_standing_numbers(text: str) -> None:
    assert may_hold_phone(text)


def _phones_without_gate(monkeypatch, texts: list[str]) -> list[list]:
    monkeypatch.setattr(redact_module, "may_hold_phone", lambda text: True)
    return [list(REDACTOR._phones(t)) for t in texts]


PHONE_TEXTS = st.lists(
    st.one_of(st.sampled_from(list("0123456789 -./()+_:#xXeEa%،٣")), PIECES), max_size=25
).map("".join)


@settings(max_examples=300, deadline=None)
@given(st.lists(PHONE_TEXTS, min_size=1, max_size=10))
def test_phone_gate_never_drops_a_kept_phone(texts: list[str]) -> None:
    with pytest.MonkeyPatch.context() as patch:
        ungated = _phones_without_gate(patch, texts)
    assert [list(REDACTOR._phones(t)) for t in texts] == ungated


def test_phone_gate_never_drops_a_kept_phone_in_the_corpus(monkeypatch) -> None:
    texts = _corpus()
    gated = [list(REDACTOR._phones(t)) for t in texts]
    assert gated == _phones_without_gate(monkeypatch, texts)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(PHONE_TEXTS, TEXTS), min_size=1, max_size=20))
def test_phone_gate_in_polars_is_may_hold_phone_exactly(texts: list[str]) -> None:
    texts += _corpus()
    rust = pl.Series(texts, dtype=pl.String).str.contains(_KEEPABLE_PHONE).to_list()
    assert rust == [may_hold_phone(t) for t in texts]


def _every_detector_on_every_text(texts: list[str]) -> dict[str, tuple[str, Counter]]:
    """The cleaning without any gate: ids replaced, then every detector, on every text."""
    out = {}
    for text in texts:
        free, n_ids = REPLACER.replace_counted(text)
        cleaned, found = REDACTOR.redact(free)
        out[text] = (cleaned, Counter(found) + Counter(pseudonym=n_ids))
    return out


def _gated_cleaning(texts: list[str], gate=gated) -> dict[str, tuple[str, Counter]]:
    candidates = list(gate(pl.Series(texts, dtype=pl.String).unique(), IDS, CONFIG))
    cleaned = clean_texts(candidates, REPLACER, CONFIG)
    return {
        t: (cleaned[t][0], Counter(cleaned[t][1])) if t in cleaned else (t, Counter())
        for t in texts
    }


@settings(max_examples=300, deadline=None)
@given(st.lists(TEXTS, min_size=1, max_size=20))
def test_gated_cleaning_equals_every_detector_on_every_text(texts: list[str]) -> None:
    assert _gated_cleaning(texts) == _every_detector_on_every_text(texts)


# Texts at the edge of each sharper gate: the shortest token, secret, domain and phone it passes.
EDGES = [
    "Authorization: Bearer abcdefgh12345678",
    "api_key=abc123",
    "PASSWORD: 'hunter'",
    "mail a@b.io",
    "call 555 1234",
    "+1 555 1234",
    "u-7@example.org",
    "u-7 at 10.0.0.1",
]


def test_gated_cleaning_equals_every_detector_on_every_text_of_the_corpus() -> None:
    texts = _corpus() + [f"{IDS[0]} wrote: {t}" for t in _corpus()[:40]] + EDGES
    assert _gated_cleaning(texts) == _every_detector_on_every_text(texts)
    assert all(_every_detector_on_every_text([t])[t][0] != t for t in EDGES)


@settings(max_examples=300, deadline=None)
@given(st.lists(TEXTS, min_size=1, max_size=20))
def test_id_gated_cleaning_equals_every_detector_on_every_text(texts: list[str]) -> None:
    assert _gated_cleaning(texts, id_gated) == _every_detector_on_every_text(texts)


def test_id_gated_cleaning_equals_every_detector_on_every_text_of_the_corpus() -> None:
    # the corpus's texts again with an id in front: their detectors are gated on the id-free text
    texts = _corpus() + [f"{i} wrote: {t}" for i in IDS for t in _corpus()[:40]] + EDGES
    assert _gated_cleaning(texts, id_gated) == _every_detector_on_every_text(texts)


def test_id_gated_gives_a_text_holding_an_id_the_pseudonym_gate_alone() -> None:
    texts = ["u-7 at 10.0.0.1", "menu-7 via https://a.io", "host 10.0.0.1", "plain text"]
    found = dict(id_gated(pl.Series(texts), ["u-7"], CONFIG))
    # "menu-7" holds "u-7" glued to a letter: the gate is a superset, the replacer decides
    assert found["u-7 at 10.0.0.1"] == found["menu-7 via https://a.io"] == {"pseudonym"}
    assert "ip" in found["host 10.0.0.1"] and "pseudonym" not in found["host 10.0.0.1"]
    assert "plain text" not in found


def test_python_digits_are_all_in_the_rust_digit_class() -> None:
    chars = pl.Series([chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000])
    python_digits = chars.filter(chars.map_elements(str.isdigit, return_dtype=pl.Boolean))
    assert python_digits.str.contains(r"[\p{Nd}\p{No}]").all()


def test_python_decimal_digits_are_all_rust_digits() -> None:
    # The phone gate counts digits with Rust's \d where `may_hold_phone` counts Python's (Rust's
    # newer Unicode has a few more: the gate only lets more texts through).
    chars = pl.Series([chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000])
    python = chars.map_elements(lambda c: re.match(r"\d", c) is not None, return_dtype=pl.Boolean)
    assert python.sum() > 600 and chars.filter(python).str.contains(r"^\d$").all()


def test_python_whitespace_is_all_in_the_rust_space_class() -> None:
    chars = pl.Series([chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000])
    python_spaces = chars.filter(
        chars.map_elements(lambda c: re.fullmatch(r"\s", c) is not None, return_dtype=pl.Boolean)
    )
    assert python_spaces.len() > 20 and python_spaces.str.contains(r"^[\s\x{1c}-\x{1f}]$").all()


def test_caseless_matches_what_python_ignorecase_matches() -> None:
    words = ["Bearer", "key", "Acme", "revenue"]
    variants = [
        "BEARER",
        "bEaReR",
        "\u212aey",
        "KEY",
        "acme",
        "ACME",
        "revenue",
        "REVENUE",
        "revenue".replace("e", "E"),
    ]
    variants += ["b\u0131sic", "\u0130ncome", "\u017fecret"]
    for word in words + ["basic", "income", "secret"]:
        python = re.compile(re.escape(word), re.IGNORECASE)
        frame = pl.DataFrame({"v": variants})
        rust = frame.select(pl.col("v").str.contains(caseless(word))).to_series().to_list()
        assert all(r or not python.search(v) for v, r in zip(variants, rust, strict=True)), word


def test_digit_gates_run_on_the_texts_with_a_digit_and_land_on_their_own_text() -> None:
    texts = ["see www.a.io", "call +1 415 555 0100", "see www.b.io", "fax +1 415 555 0199"]
    found = dict(gated(pl.Series(texts), [], CONFIG))
    digit_kinds = {"ip", "phone", "money", "card", "iban", "national_id", "address"}
    assert found["see www.a.io"] == found["see www.b.io"] == {"url"}
    assert "phone" in found["call +1 415 555 0100"]
    assert "phone" in found["fax +1 415 555 0199"]
    assert not (found["call +1 415 555 0100"] | found["fax +1 415 555 0199"]) & {"url"}
    assert all(not found[t] & digit_kinds for t in ("see www.a.io", "see www.b.io"))


def _some_gate_without_the_one_search(texts: list[str]) -> tuple[list[str], int]:
    """(the texts some gate holds for and the one search misses, how many some gate holds for)."""
    frame = pl.DataFrame({"value": texts}, schema={"value": pl.String})
    gates = detector_gates(pl.col("value"), IDS, CONFIG)
    some = frame.select(pl.any_horizontal(*gates.values())).to_series()
    one = frame.select(any_gate(pl.col("value"), IDS, CONFIG)).to_series()
    return frame.filter(some & ~one).get_column("value").to_list(), some.sum()


def test_the_one_search_holds_wherever_some_gate_holds_in_the_corpus() -> None:
    missed, held = _some_gate_without_the_one_search(_corpus() + EDGES)
    assert held > 0
    assert missed == []


# The corpus is checked once above, not again with every example (each text is searched alone).
@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(PHONE_TEXTS, TEXTS), min_size=1, max_size=20))
def test_the_one_search_holds_wherever_some_gate_holds(texts: list[str]) -> None:
    assert _some_gate_without_the_one_search(texts)[0] == []


_ID_TEXTS = ["to u-7 now", "menu-7", "to bob", "u-8 and a-b", "plain text", IDS[0]]


@pytest.mark.parametrize(
    ("ids", "holding"),
    [
        # every id holds "-": the texts without one are not searched, those with one are
        ([IDS[0], "u-7"], {"to u-7 now", "menu-7", IDS[0]}),
        # no character shared: every text is searched
        (["u-7", "bob"], {"to u-7 now", "menu-7", "to bob"}),
    ],
)
def test_pseudonym_gate_holds_exactly_where_a_text_holds_an_id(
    ids: list[str], holding: set[str]
) -> None:
    found = dict(gated(pl.Series(_ID_TEXTS), ids, CONFIG))
    assert {text for text, gates in found.items() if "pseudonym" in gates} == holding
