"""The context rules of the older number kinds: a phone is never a piece of a longer grouped number
(E.164 caps a number at 15 digits), and a currency-less amount next to a finance word is not money
when it counts the noun after it. Expected spans are written out by hand."""

from __future__ import annotations

import pytest

from pipelines.privacy.redact import RedactionConfig, Redactor

REDACTOR = Redactor(RedactionConfig())


def _spans(text: str, kind: str) -> list[str]:
    return [text[a:b] for a, b, k in REDACTOR.find(text) if k == kind]


@pytest.mark.parametrize(
    "text",
    [
        # 22 digits in groups of four: its last 14 or 10 are a valid US or DE number on their own.
        "USPS tracking 9400 2550 3561 9751 4777 15",
        "USPS tracking 9361 3905 3146 5670 4895 95",
        "Parcel 9205 5614 9409 8894 2969 28 is on its way.",
        "Account 030 1234 5678 9012 3456",  # 17 digits: its last 12 read as a DE number
    ],
)
def test_a_piece_of_a_longer_grouped_number_is_not_a_phone(text: str) -> None:
    assert _spans(text, "phone") == []


@pytest.mark.parametrize(
    ("text", "phones"),
    [
        # A `+` starts a number: two international numbers side by side stay two phones.
        ("Numbers: +1 415 555 2671 +1 415 555 2672", ["+1 415 555 2671", "+1 415 555 2672"]),
        # A short number before a phone word is no part of the phone's group.
        ("Room 12, call 415 555 2671.", ["415 555 2671"]),
        ("Call 4155552671 or fax 415 555 2672.", ["4155552671", "415 555 2672"]),
    ],
)
def test_phones_beside_other_numbers_are_still_phones(text: str, phones: list[str]) -> None:
    assert _spans(text, "phone") == phones


@pytest.mark.parametrize(
    "text",
    [
        "Call of Duty 4 sold 15 million copies.",
        "The app was bought by 40k users last year.",
        "Spending went up while 2,500 customers paid on time.",
    ],
)
def test_an_amount_that_counts_a_noun_is_not_money(text: str) -> None:
    assert _spans(text, "money") == []


@pytest.mark.parametrize(
    ("text", "money"),
    [
        ("The game sold 15 million.", ["15 million"]),
        ("The startup raised 5M last year.", ["5M"]),
        ("a 2bn valuation", ["2bn"]),
        ("Her salary of 85,000 is fine.", ["85,000"]),
        # With a currency the word after it never matters.
        ("It sold for $15 million copies of nothing.", ["$15 million"]),
    ],
)
def test_an_amount_before_a_function_or_finance_word_is_money(text: str, money: list[str]) -> None:
    assert _spans(text, "money") == money
