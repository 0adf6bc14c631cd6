"""Which texts the pseudonymizer or the redactor could change, decided in Polars (Rust regex,
Aho–Corasick) so Python only sees those. Every test is a superset of the gate that the matching
detector in `redact.py` passes before it can find a span, so a text failing all of them is
provably left alone (tests/unit/test_privacy_prefilter.py checks this on the PII corpus and on
generated text). Python's case-insensitive matching also folds `İ`/`ı` into `i` and `ſ` into `s`,
which Rust's does not: those are spelled out."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import polars as pl

from pipelines.privacy.addresses import ADDRESS_CORES
from pipelines.privacy.identifiers import (
    BARE_DIGITS_CORE,
    CARD_CORE,
    CUE_WORDS,
    IBAN_CORE,
    NATIONAL_ID_CORES,
)
from pipelines.privacy.patterns import RUN_EXCLUDES
from pipelines.privacy.person_names import PERSON_CORES
from pipelines.privacy.redact import RedactionConfig

# Python's `str.isdigit` (the redactor's gate for ip, phone and money) is Nd plus some No digits.
_ANY_DIGIT = r"[\p{Nd}\p{No}]"
_IPV4_SHAPE = r"\d\.\d{1,3}\.\d{1,3}\.\d"  # `_IPV4`: four dotted octets
_IPV6_SHAPE = r"(?:[0-9a-fA-F]{0,4}:){2}"  # `_IPV6`: at least two colon-ended hex groups in a row
_PHONE_SHAPE = r"\d[\d \t().\-/\x{a0}]{5,}\d"  # `_PHONE_CANDIDATE` without its optional lead
# `_MONEY` needs a currency symbol or code, or a currency word at most a magnitude after a digit;
# the other money patterns need a `_FINANCE_CUE` word (its `\b` spelled with ASCII word characters:
# wherever Python sees a word boundary, one of these classes matches) and a magnitude or grouped
# amount. `_SPACE` is Python's `\s`, which also counts \x1c-\x1f.
_CURRENCY_MARKS = (
    "$",
    "€",
    "£",
    "¥",
    "₹",
    "₩",
    "₽",
    "CHF",
    "USD",
    "EUR",
    "GBP",
    "JPY",
    "CAD",
    "AUD",
    "NZD",
    "INR",
    "CNY",
    "RMB",
    "SEK",
    "NOK",
    "DKK",
    "PLN",
    "BRL",
    "MXN",
    "ZAR",
    "SGD",
    "HKD",
)
_SPACE = r"[\s\x{1c}-\x{1f}]"
# `{_NUM}(?:{_MAG})?\s?{_WORDCUR}`: between the amount's last digit and the currency word only
# spaces, the magnitude's letters and the dot of `mio.` / `mrd.`, at most 12 characters (a class,
# not `.`: 20× faster in Rust's regex, which was most of the gating time).
_CURRENCY_WORD = (
    r"\d[\s\x{1c}-\x{1f}A-Za-z.]{0,12}(?:dollar|euro|pounds|bucks|yen|yuan|rupee|franc|cent)"
)
_FINANCE_WORDS = (
    "revenue",
    "revenues",
    "sales",
    "profit",
    "profits",
    "income",
    "earnings",
    "turnover",
    "arr",
    "mrr",
    "budget",
    "budgets",
    "funding",
    "raised",
    "raise",
    "raising",
    "valuation",
    "valued",
    "salary",
    "salaries",
    "wage",
    "wages",
    "price",
    "priced",
    "prices",
    "pricing",
    "cost",
    "costs",
    "costing",
    "spend",
    "spending",
    "spent",
    "paid",
    "pay",
    "payment",
    "invoice",
    "invoiced",
    "deal",
    "contract",
    "worth",
    "loss",
    "losses",
    "ebitda",
    "financing",
    "investment",
    "invested",
    "fee",
    "fees",
    "fine",
    "fined",
    "fines",
    "bonus",
    "compensation",
    "sold",
    "bought",
    "acquired",
    "acquisition",
    "debt",
    "loan",
    "grant",
    "donation",
    "refund",
)
_NOT_WORD = "(?:^|$|[^A-Za-z0-9_])"
_NUMBER_START = r"(?:^|[^A-Za-z0-9_.,])\d[\d,.\x{a0}\x{202f}]*"  # `(?<![\w.,]){_NUM}`
_AMOUNT_WITH_MAGNITUDE = (  # `_MAGNITUDE_AMOUNT` or `_GROUPED_AMOUNT`
    rf"{_NUMBER_START}{_SPACE}?(?:[kKmMbB]|bn|BN|mn|MN|mm|MM|tn)(?:$|[^A-Za-z0-9_%])"
    rf"|\d{_SPACE}(?:thousand|million|billion|trillion|mio|mrd|grand)"
    r"|(?:^|[^A-Za-z0-9_.,])\d{1,3},\d{3}"
)
_PYTHON_FOLDS = {"i": "iI\u0130\u0131", "s": "sS\u017f", "k": "kK\u212a"}
# `may_hold_phone` exactly: ≥7 digits inside one `_PHONE_RUN` between a start not glued on the left
# (or a `+` after neither digit nor `+`) and an end not glued on the right.
_KEEPABLE_PHONE = (
    rf"(?:^|[^A-Za-z0-9_/.:\-]|[^0-9+]\+)(?:[^{RUN_EXCLUDES}\d]*\d){{7}}[^{RUN_EXCLUDES}]*"
    r"(?:$|[^A-Za-z0-9_%\-])"
)
# `_EMAIL` without its look-arounds: a character of the local part, `@`, a label and a dot before
# the two letters a top-level domain starts with.
_EMAIL_SHAPE = r"[A-Za-z0-9._%+\-]@[A-Za-z0-9][A-Za-z0-9.\-]*\.[A-Za-z]{2}"
# `_TOKEN` without its `\b`; its classes widened by the letters IGNORECASE folds into ASCII ones,
# `[^\s"'&,;]` by every non-ASCII space (a wider class only lets more texts through).
_TOKEN_CHAR = r"[A-Za-z0-9\-._~+/\x{130}\x{131}\x{17f}\x{212a}]"
_SECRET_CHAR = r"""[^ \t\n\r\x0b\x0c"'&,;]"""
_SECRET_NAMES = (
    ("api", "key"),
    ("access", "token"),
    ("refresh", "token"),
    ("auth", "token"),
    ("client", "secret"),
    ("secret", "key"),
)


def caseless(word: str) -> str:
    """Rust regex for `word` that matches wherever Python's IGNORECASE version does."""
    parts = []
    for char in word:
        lower = char.lower()
        if lower in _PYTHON_FOLDS:
            parts.append(f"[{_PYTHON_FOLDS[lower]}]")
        elif char.isascii() and char.isalpha():
            parts.append(f"[{lower}{char.upper()}]")
        else:
            parts.append(f"(?i:\\x{{{ord(char):x}}})")
    return "".join(parts)


def _any_caseless(words: Iterable[str]) -> str:
    return "|".join(caseless(w) for w in words)


def _token_shape() -> str:
    schemes = _any_caseless(("bearer", "basic", "token"))
    names = "|".join(f"{caseless(a)}[_-]?{caseless(b)}" for a, b in _SECRET_NAMES)
    names += "|" + _any_caseless(("password", "passwd"))
    return (
        rf"(?:{schemes}){_SPACE}+{_TOKEN_CHAR}{{16}}"
        rf"|(?:{names}){_SPACE}*[=:]{_SPACE}*[\"']?{_SECRET_CHAR}{{6}}"
    )


def detector_gates(text: pl.Expr, ids: list[str], config: RedactionConfig) -> dict[str, pl.Expr]:
    """Per detector (and `pseudonym` for the id replacer): False only where it cannot find a
    span."""
    digit = text.str.contains(_ANY_DIGIT)
    free, with_digit = _gates(text, ids, config)
    return free | {name: digit & gate for name, gate in with_digit.items()}


def _gates(
    text: pl.Expr, ids: list[str], config: RedactionConfig
) -> tuple[dict[str, pl.Expr], dict[str, pl.Expr]]:
    """(the gates, the gates of the detectors that find nothing in a text without a digit, which
    hold only where there is one)."""
    finance = f"{_NOT_WORD}(?:{_any_caseless(_FINANCE_WORDS)}){_NOT_WORD}"
    free = {
        "url": text.str.contains("://", literal=True) | text.str.contains("www.", literal=True),
        "token": text.str.contains(_token_shape()),
        "email": text.str.contains("@", literal=True) & text.str.contains(_EMAIL_SHAPE),
        "person": text.str.contains("|".join(PERSON_CORES)),
        "org": pl.lit(False),
        "pseudonym": text.str.contains_any(ids) if ids else pl.lit(False),
    }
    with_digit = {
        "ip": text.str.contains(_IPV4_SHAPE) | text.str.contains(_IPV6_SHAPE),
        "phone": text.str.contains(_PHONE_SHAPE) & text.str.contains(_KEEPABLE_PHONE),
        "money": text.str.contains_any(list(_CURRENCY_MARKS))
        | text.str.contains(_CURRENCY_WORD)
        | (text.str.contains(finance) & text.str.contains(_AMOUNT_WITH_MAGNITUDE)),
        # The check-digit, address and name detectors' own patterns without their look-arounds
        # (identifiers.py, addresses.py, person_names.py): a match in Python is one here.
        "card": text.str.contains(CARD_CORE),
        "iban": text.str.contains(IBAN_CORE),
        "national_id": text.str.contains("|".join(NATIONAL_ID_CORES))
        | (
            text.str.contains(f"{_NOT_WORD}(?:{_any_caseless(CUE_WORDS)})")
            & text.str.contains(BARE_DIGITS_CORE)
        ),
        "address": text.str.contains("|".join(ADDRESS_CORES)),
    }
    names = _org_names(config)
    if names:
        free["org"] = text.str.contains(_any_caseless(names))
    return free, with_digit


def any_gate(text: pl.Expr, ids: list[str], config: RedactionConfig) -> pl.Expr:
    """True wherever some gate of `_gates` holds (a superset: each gate by its widest term, a
    conjunction by one of its terms, no digit test). One search of one regex: Rust's lazy DFA
    reads a text once for all of them, where each gate's own regex reads it again (~0.3 s per
    gate and 160 MB of contexts); the gates themselves then run over the texts it passes."""
    terms = [
        r"://|www\.",  # url
        _token_shape(),
        _EMAIL_SHAPE,  # email: also an "@"
        *PERSON_CORES,
        _IPV4_SHAPE,
        _IPV6_SHAPE,
        _PHONE_SHAPE,  # phone: also `_KEEPABLE_PHONE`
        *(pl.escape_regex(mark) for mark in _CURRENCY_MARKS),  # money
        _CURRENCY_WORD,
        _AMOUNT_WITH_MAGNITUDE,  # also a finance word
        CARD_CORE,
        IBAN_CORE,
        *NATIONAL_ID_CORES,
        BARE_DIGITS_CORE,  # also a cue word
        *ADDRESS_CORES,
    ]
    org = _org_names(config)
    if org:
        terms.append(_any_caseless(org))
    gate = text.str.contains("|".join(f"(?:{term})" for term in terms))
    return gate | text.str.contains_any(ids) if ids else gate


def _org_names(config: RedactionConfig) -> list[str]:
    """The first word of each configured organization name (the org gate), none when the kind
    `org` is off."""
    if "org" not in config.kinds:
        return []
    return [n.split()[0] for n in config.org_names if n and n.strip()]


def _mask(gates: dict[str, pl.Expr], bit: dict[str, int]) -> pl.Expr:
    return pl.sum_horizontal(
        [pl.lit(0, pl.Int64), *(gate.cast(pl.Int64) * (1 << bit[n]) for n, gate in gates.items())]
    )


def gated(
    values: pl.Series, ids: list[str], config: RedactionConfig
) -> Iterator[tuple[str, frozenset[str]]]:
    """Each string of `values` some gate passes, with the names of the gates it passes (a string
    left out can be changed by neither the redactor nor the id replacer)."""
    yield from _gated(values.rename("value"), ids, config, gate_id_texts=True)


def id_gated(
    values: pl.Series, ids: list[str], config: RedactionConfig
) -> Iterator[tuple[str, frozenset[str]]]:
    """`gated`, except that a string holding an id comes with `pseudonym` alone: its cleaner
    (release/privatize/text_cleaner.py) gates the detectors on its id-free version and never reads
    the gates of the string as it is, so they are not searched for (at 1 GB the strings holding an
    id are 40 % of those some gate passes and half of the bytes the detectors' gates read)."""
    yield from _gated(values.rename("value"), ids, config, gate_id_texts=False)


_ID_ONLY = frozenset({"pseudonym"})


def _gated(
    values: pl.Series, ids: list[str], config: RedactionConfig, gate_id_texts: bool
) -> Iterator[tuple[str, frozenset[str]]]:
    # The ids are searched for once: their Aho-Corasick search reads every text at ~80 MB/s (no
    # prefilter applies to thousands of ids), the costliest gate, and both the one search and the
    # `pseudonym` gate would otherwise read the texts for them.
    free, with_digit = _gates(pl.col("value"), [], config)
    free["pseudonym"] = pl.col(_HOLDS_ID)
    names = [*free, *with_digit]
    bit = {name: i for i, name in enumerate(names)}
    frame = pl.DataFrame([values, _holds_id(values, ids).alias(_HOLDS_ID)])
    if not gate_id_texts:
        holding = frame.filter(pl.col(_HOLDS_ID))
        frame = frame.filter(~pl.col(_HOLDS_ID))
        yield from ((value, _ID_ONLY) for value in holding.get_column("value").to_list())
        del holding
    frame = frame.filter(any_gate(pl.col("value"), [], config) | pl.col(_HOLDS_ID))
    values = frame.get_column("value")
    masks = frame.select(_mask(free, bit)).to_series()
    # the digit detectors' gates run over the texts holding a digit alone (a third of a
    # release's distinct texts hold none; those regexes were most of the gating time)
    has_digit = values.str.contains(_ANY_DIGIT)
    at = has_digit.arg_true()
    digit_masks = values.filter(has_digit).to_frame().select(_mask(with_digit, bit)).to_series()
    masks = masks.scatter(at, masks.gather(at) + digit_masks)
    passed = pl.DataFrame({"value": values, "mask": masks}).filter(pl.col("mask") > 0)
    names_of: dict[int, frozenset[str]] = {}
    for value, bits in zip(passed["value"].to_list(), passed["mask"].to_list(), strict=True):
        if bits not in names_of:
            names_of[bits] = frozenset(name for i, name in enumerate(names) if bits >> i & 1)
        yield value, names_of[bits]


_HOLDS_ID = "_holds_id"


def _holds_id(values: pl.Series, ids: list[str]) -> pl.Series:
    """Whether each of `values` holds one of `ids`. A text without a character that every id holds
    (the `-` of UUIDs and of `u-7`) holds none: a memchr search for it leaves the Aho-Corasick
    search the texts holding it alone (at 1 GB, 40 % of the texts' bytes)."""
    if not ids:
        return pl.repeat(False, len(values), dtype=pl.Boolean, eager=True)
    shared = sorted(set(ids[0]).intersection(*ids[1:]))
    if not shared:
        return values.str.contains_any(ids)
    may = values.str.contains(shared[0], literal=True)
    at = may.arg_true()
    return may.scatter(at, values.gather(at).str.contains_any(ids))
