"""Check-digit kinds of the redactor: payment-card numbers (`card`), IBANs (`iban`) and national ids
(`national_id`).

A span is kept only when its check digits hold (Luhn plus the issuer's prefix and length; mod 97
plus the country's IBAN format; each national id's own rule, python-stdnum), so order numbers,
dates and product codes stay. Ids whose bare digits are too common (a US SSN written without
dashes, a German Steuer-ID, a French NIR without its spaces) also need a cue word just before them.

Each pattern is built from a `*_CORE` regex that has no look-around, back-reference, `\\b` or `\\s`
and uses ASCII classes only, so Rust's regex (the Polars prefilter, prefilter.py) matches it
wherever Python does: the Python pattern only adds look-arounds, and the gate is the core itself.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from stdnum import iban as stdnum_iban
from stdnum import luhn
from stdnum.de import idnr
from stdnum.es import dni, nie
from stdnum.fr import nir
from stdnum.it import codicefiscale
from stdnum.us import ssn

Span = tuple[int, int, str]

# -- payment cards -------------------------------------------------------------------------------

# A run of digit groups joined by one space or dash. A card is a stretch of whole groups of 13-19
# digits inside a run (a date or an amount may sit right before it in the same run).
CARD_CORE = r"[0-9](?:[ \-]?[0-9]){12}"
_DIGIT_RUN = re.compile(r"(?<![\w+\-.,/])[0-9]+(?:[ \-][0-9]+)*")
_GROUP = re.compile(r"[0-9]+")
# (first digits, lengths): Visa (13-digit cards are no longer issued, and 13 digits after a 4 are
# often a phone), Mastercard, Amex, Discover, Diners, JCB, UnionPay, Maestro.
_ISSUERS: tuple[tuple[tuple[int, int, int], tuple[int, ...]], ...] = (
    ((1, 4, 4), (16, 19)),
    ((2, 51, 55), (16,)),
    ((4, 2221, 2720), (16,)),
    ((2, 34, 34), (15,)),
    ((2, 37, 37), (15,)),
    ((4, 6011, 6011), (16, 17, 18, 19)),
    ((3, 644, 649), (16, 17, 18, 19)),
    ((2, 65, 65), (16, 17, 18, 19)),
    ((3, 300, 305), (14, 15, 16, 17, 18, 19)),
    ((2, 36, 36), (14, 15, 16, 17, 18, 19)),
    ((2, 38, 39), (16, 17, 18, 19)),
    ((4, 3528, 3589), (16, 17, 18, 19)),
    ((2, 62, 62), (16, 17, 18, 19)),
    ((4, 5018, 5018), (13, 14, 15, 16, 17, 18, 19)),
    ((4, 5020, 5020), (13, 14, 15, 16, 17, 18, 19)),
    ((4, 5038, 5038), (13, 14, 15, 16, 17, 18, 19)),
    ((4, 6304, 6304), (13, 14, 15, 16, 17, 18, 19)),
    ((4, 6759, 6763), (13, 14, 15, 16, 17, 18, 19)),
)


def _issued(digits: str) -> bool:
    return any(
        low <= int(digits[:width]) <= high and len(digits) in lengths
        for (width, low, high), lengths in _ISSUERS
    )


def is_card_number(digits: str) -> bool:
    """Whether `digits` (digits only) is a card number an issuer could have given: a known issuer's
    prefix and length, and the Luhn check digit."""
    return 13 <= len(digits) <= 19 and _issued(digits) and luhn.is_valid(digits)


def cards(text: str) -> Iterator[Span]:
    for run in _DIGIT_RUN.finditer(text):
        if len(run.group()) < 13 or _glued_after(text, run.end()):
            continue
        groups = [m.span() for m in _GROUP.finditer(text, run.start(), run.end())]
        yield from _cards_in(text, groups)


def _cards_in(text: str, groups: list[tuple[int, int]]) -> Iterator[Span]:
    """The longest card from each group on, skipping past each card found. A grouped card's groups
    are all the groups its separator joins there: four groups of a longer grouped number (a
    tracking number) are no card, but a date before a card is no part of it."""
    i = 0
    while i < len(groups):
        best = None
        digits = ""
        separators = set()
        for j in range(i, len(groups)):
            if j > i:
                separators.add(_between(text, groups, j))
            digits += text[groups[j][0] : groups[j][1]]
            if len(digits) > 19 or len(separators) > 1:
                break
            if is_card_number(digits) and _whole(text, groups, i, j, separators):
                best = j
        if best is None:
            i += 1
            continue
        yield groups[i][0], groups[best][1], "card"
        i = best + 1


def _between(text: str, groups: list[tuple[int, int]], j: int) -> str:
    """The separator between group j - 1 and group j."""
    return text[groups[j - 1][1] : groups[j][0]]


def _whole(text: str, groups: list[tuple[int, int]], i: int, j: int, separators: set[str]) -> bool:
    if not separators:
        return True
    (separator,) = separators
    before = i > 0 and _between(text, groups, i) == separator
    after = j + 1 < len(groups) and _between(text, groups, j + 1) == separator
    return not (before or after)


def _glued_after(text: str, end: int) -> bool:
    return end < len(text) and (text[end].isalnum() or text[end] in "_")


# -- IBAN ----------------------------------------------------------------------------------------

# Country code, check digits and 11 to 30 more letters or digits, in groups split by single
# spaces (printed IBANs are in groups of four). Upper case only, as IBANs are printed.
IBAN_CORE = r"[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]){11,30}"
_IBAN = re.compile(rf"(?<![A-Za-z0-9]){IBAN_CORE}")


def ibans(text: str) -> Iterator[Span]:
    """Longest valid IBAN from each candidate's start: the greedy pattern may run into the next
    upper-case word, so shorter prefixes that end where a group ends are tried too."""
    for m in _IBAN.finditer(text):
        start, raw = m.start(), m.group()
        for end in range(len(raw), 14, -1):
            if end < len(raw) and raw[end] != " ":
                continue  # a prefix must end where a group ends
            if raw[end - 1] == " " or _glued_after(text, start + end):
                continue
            if stdnum_iban.is_valid(raw[:end].replace(" ", "")):
                yield start, start + end, "iban"
                break


# -- national ids --------------------------------------------------------------------------------

SSN_CORE = r"[0-9]{3}[ \-][0-9]{2}[ \-][0-9]{4}"  # US social security number, 123-45-6789
BARE_DIGITS_CORE = r"[0-9]{9}"  # an SSN, Steuer-ID or NIR without separators (needs a cue)
NINO_CORE = (  # UK National Insurance number, QQ 12 34 56 C (HMRC's letter rules)
    r"[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z] ?[0-9]{2} ?[0-9]{2} ?[0-9]{2} ?[A-D]"
)
IDNR_SPACED_CORE = r"[0-9]{2} [0-9]{3} [0-9]{3} [0-9]{3}"  # German Steuer-ID, 12 345 678 901
NIR_SPACED_CORE = (  # French NIR in its printed groups, 1 84 12 76 451 089 46
    r"[1-478] [0-9]{2} [0-9]{2} (?:[0-9]{2}|2[AB]) [0-9]{3} [0-9]{3} [0-9]{2}"
)
DNI_CORE = r"[0-9]{8}-?[A-Z]"  # Spanish DNI, 12345678Z
NIE_CORE = r"[XYZ]-?[0-9]{7}-?[A-Z]"  # Spanish NIE, X1234567L
CF_CORE = (  # Italian codice fiscale, RSSMRA85T10A562S
    r"[A-Z]{6}[0-9LMNP-V]{2}[A-EHLMPR-T][0-9LMNP-V]{2}[A-Z][0-9LMNP-V]{3}[A-Z]"
)
# Every id but the cued ones (those need a cue word too: `CUE_WORDS`).
NATIONAL_ID_CORES = (
    SSN_CORE,
    NINO_CORE,
    IDNR_SPACED_CORE,
    NIR_SPACED_CORE,
    DNI_CORE,
    NIE_CORE,
    CF_CORE,
)

_NOT_BEFORE = r"(?<![\w\-/.,])"
_NOT_AFTER = r"(?![\w\-]|[./,][0-9])"
_SSN = re.compile(rf"{_NOT_BEFORE}{SSN_CORE}{_NOT_AFTER}")
_BARE = re.compile(rf"{_NOT_BEFORE}[0-9]{{9}}(?:[0-9]{{2}}(?:[0-9]{{4}})?)?{_NOT_AFTER}")
_NINO = re.compile(rf"(?<![A-Za-z0-9]){NINO_CORE}(?![A-Za-z0-9])")
_IDNR_SPACED = re.compile(rf"{_NOT_BEFORE}{IDNR_SPACED_CORE}{_NOT_AFTER}")
_NIR_SPACED = re.compile(rf"{_NOT_BEFORE}{NIR_SPACED_CORE}{_NOT_AFTER}")
_LETTERED = re.compile(rf"(?<![A-Za-z0-9\-])(?:{DNI_CORE}|{NIE_CORE}|{CF_CORE})(?![A-Za-z0-9\-])")
_NINO_PREFIXES_NOT_ISSUED = frozenset({"BG", "GB", "KN", "NK", "NT", "TN", "ZZ"})
# A word naming the id, at most a few words before it ("SSN: 123456789", "Steuer-ID lautet …").
# Each alternative holds one of `CUE_WORDS` after a word boundary (the prefilter's gate).
_ID_CUE = re.compile(
    r"(?i)\b(?:ssn|social[ -]security(?:[ -]number)?|steuer-?id|steuer-?identifikationsnummer|"
    r"identifikationsnummer|idnr|tax[ -]id|tin|nir|insee|s[ée]curit[ée] sociale|s[ée]cu)"
    r"\b[^\n\d]{0,30}$"
)
CUE_WORDS = ("ssn", "social", "steuer", "identifikationsnummer", "idnr", "tax", "tin", "nir")
CUE_WORDS += ("insee", "sécu", "secu")
_CUE_WINDOW = 50


def national_ids(text: str) -> Iterator[Span]:
    for m in _SSN.finditer(text):
        raw = m.group()
        if raw[3] == raw[6] and ssn.is_valid(raw.replace(" ", "-")):
            yield m.start(), m.end(), "national_id"
    for m in _NINO.finditer(text):
        raw = m.group()
        if raw[:2] not in _NINO_PREFIXES_NOT_ISSUED and len(raw) in (9, 13):  # no or all spaces
            yield m.start(), m.end(), "national_id"
    for pattern, valid in ((_IDNR_SPACED, idnr.is_valid), (_NIR_SPACED, nir.is_valid)):
        for m in pattern.finditer(text):
            if valid(m.group()) and (pattern is _NIR_SPACED or _cued(text, m.start())):
                yield m.start(), m.end(), "national_id"
    for m in _BARE.finditer(text):
        if _bare_id_valid(m.group()) and _cued(text, m.start()):
            yield m.start(), m.end(), "national_id"
    for m in _LETTERED.finditer(text):
        raw = m.group()
        if (dni.is_valid(raw) or nie.is_valid(raw)) if len(raw) < 16 else _fiscal_code(raw):
            yield m.start(), m.end(), "national_id"


def _bare_id_valid(digits: str) -> bool:
    if len(digits) == 9:
        return ssn.is_valid(digits)
    if len(digits) == 11:
        return idnr.is_valid(digits)
    return nir.is_valid(digits)


def _fiscal_code(raw: str) -> bool:
    try:
        return codicefiscale.is_valid(raw)
    except ValueError:  # an impossible birth date in a well-formed code
        return False


def _cued(text: str, start: int) -> bool:
    return _ID_CUE.search(text, max(0, start - _CUE_WINDOW), start) is not None
