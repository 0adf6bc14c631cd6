"""Postal addresses (`address`): a house number next to a street name that ends in a street word,
with the postcode and town when they follow, in the shapes of the US, the UK, Germany and France:

- US / UK: `1600 Pennsylvania Avenue NW, Washington, DC 20500`, `221B Baker Street, London NW1 6XE`
  (number, capitalised name words, a street word such as Street, Ave, Road, Lane, Close, Gardens);
- DE: `Hauptstraße 5, 10115 Berlin`, `Berliner Str. 12a` (a street word as the name's ending or as
  its own word, then the number, then the PLZ and town);
- FR: `12 rue de la Paix, 75002 Paris`, `3 bis avenue Victor Hugo` (number, street type, name, then
  the postcode and town).

The street word is the context: a number next to ordinary capitalised words ("Top 10 Tips") is
not an address. Each `*_CORE` has no look-around, `\\b` or `\\s` (spaces are `[ \\t]`), so Rust's
regex matches it wherever Python does and the Polars prefilter can use it as it is.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

Span = tuple[int, int, str]

_UP = "A-ZÀ-ÖØ-Þ"
_LOW = "a-zß-öø-ÿ"
_WORD = rf"[{_UP}][{_LOW}]+(?:-[{_UP}][{_LOW}]+)?"
_EN_STREET = (
    "Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Place|Pl|Terrace|Way|"
    "Close|Crescent|Gardens|Grove|Square|Sq|Parkway|Pkwy|Highway|Hwy|Circle|Mews"
)
_US_STATE_ZIP = r"[A-Z]{2}[ \t]+[0-9]{5}(?:-[0-9]{4})?"
_UK_POSTCODE = r"[A-Z]{1,2}[0-9][A-Z0-9]?[ \t]?[0-9][A-Z]{2}"
EN_CORE = (
    rf"[0-9]{{1,5}}[A-Za-z]?,?[ \t]+(?:(?:{_WORD}|[0-9]{{1,3}}(?:st|nd|rd|th)|[NSEW]\.?)[ \t]+)"
    rf"{{1,4}}(?:{_EN_STREET})"
)
_EN_TAIL = (
    r"\.?(?:[ \t]+(?:NW|NE|SW|SE|N|S|E|W)(?![A-Za-z]))?"
    r"(?:,?[ \t]*(?:Apt|Suite|Unit|Flat|Ste)\.?[ \t]*#?[0-9]{1,5}[A-Za-z]?)?"
    rf"(?:,[ \t]*{_WORD}(?:[ \t]{_WORD}){{0,2}})?"
    rf"(?:,?[ \t]+(?:{_US_STATE_ZIP}|{_UK_POSTCODE}))?"
)
_DE_SUFFIX = "straße|strasse|str\\.|weg|platz|allee|gasse|ring|damm|ufer|chaussee|pfad"
_DE_STREET_WORD = "Straße|Strasse|Str\\.|Weg|Platz|Allee|Gasse|Ring|Damm|Ufer|Chaussee"
DE_CORE = (
    rf"(?:[{_UP}][{_LOW}]+(?:-[{_UP}][{_LOW}]+)*(?:{_DE_SUFFIX})"
    rf"|(?:{_WORD}[ \t]){{1,3}}(?:{_DE_STREET_WORD}))[ \t]*[0-9]{{1,4}}"
)
_DE_TAIL = (
    r"(?:[ \t]?[a-z](?![A-Za-z]))?(?:[-/][0-9]{1,4}[a-z]?)?"
    rf"(?:,?[ \t]+(?:D-)?[0-9]{{5}}[ \t]+{_WORD}(?:[ \t]{_WORD})?)?"
)
_FR_TYPE = (
    "[Rr]ue|[Aa]venue|[Bb]oulevard|[Bb]d|[Pp]lace|[Cc]hemin|[Aa]llée|[Ii]mpasse|[Qq]uai|"
    "[Rr]oute|[Cc]ours|[Pp]assage|[Ff]aubourg|[Ss]quare"
)
_FR_PARTICLE = (
    r"(?:de[ \t]la[ \t]|de[ \t]l['’]|du[ \t]|des[ \t]|de[ \t]|d['’]|la[ \t]|le[ \t]|les[ \t]|l['’])"
)
FR_CORE = (
    rf"[0-9]{{1,4}}(?:[ \t]?(?:bis|ter|[A-D]))?,?[ \t]+(?:{_FR_TYPE})[ \t]+{_FR_PARTICLE}?"
    rf"[{_UP}][{_LOW}'’\-]+"
)
_FR_TAIL = (
    rf"(?:[ \t](?:{_FR_PARTICLE}|et[ \t])?[{_UP}][{_LOW}'’\-]+){{0,4}}"
    rf"(?:,?[ \t]+[0-9]{{5}}[ \t]+[{_UP}][{_UP}{_LOW}'’\-]+)?"
)
ADDRESS_CORES = (EN_CORE, DE_CORE, FR_CORE)

_NOT_BEFORE = r"(?<![\w\-/.,])"
_EN = re.compile(rf"{_NOT_BEFORE}(?P<core>{EN_CORE})(?![A-Za-z]){_EN_TAIL}")
_DE = re.compile(rf"(?<![\w\-]){DE_CORE}(?![0-9]){_DE_TAIL}")
_FR = re.compile(rf"{_NOT_BEFORE}{FR_CORE}{_FR_TAIL}")
# Capitalised words that make "Top 10 Best Way" or "Chapter 2 The Place" look like an address.
_NOT_STREET_NAMES = frozenset(
    [
        "The",
        "A",
        "An",
        "Best",
        "Only",
        "Easy",
        "Easiest",
        "Better",
        "Right",
        "Wrong",
        "Same",
        "Other",
        "Next",
        "Last",
        "First",
        "One",
        "My",
        "Your",
        "Our",
        "Their",
        "His",
        "Her",
        "This",
        "That",
        "These",
        "Those",
        "More",
        "Most",
        "Simple",
        "Quick",
        "Fast",
        "Good",
        "Great",
        "Big",
        "Small",
    ]
)


def addresses(text: str) -> Iterator[Span]:
    for pattern in (_EN, _DE, _FR):
        for m in pattern.finditer(text):
            if pattern is _EN and _names_no_street(m.group("core")):
                continue
            end = m.end()
            while end > m.start() and text[end - 1] in " \t,":
                end -= 1
            yield m.start(), end, "address"


def _names_no_street(core: str) -> bool:
    """The words between the number and the street word are ordinary ones ("10 Best Way")."""
    words = core.split()[1:-1]
    return any(w.rstrip(",.") in _NOT_STREET_NAMES for w in words)
