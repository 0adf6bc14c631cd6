"""Redaction of released text: typed placeholders for personal and confidential spans.

`Redactor(config).redact(text)` finds candidate spans with one detector per kind, resolves
overlaps (leftmost first, then longest, then kind priority) and replaces each kept span by its
placeholder:

| kind    | placeholder | what                                                                      |
|---------|-------------|---------------------------------------------------------------------------|
| `url`   | `[URL]`     | URLs carrying credentials (`user:pass@host`) or secrets in query/fragment  |
|         |             | parameters (`token=`, `api_key=`, `access_token=`, `sig=`, ...)           |
| `token` | `[TOKEN]`   | bearer / basic authorization tokens and `api_key=…`-style secrets in text  |
| `email` | `[EMAIL]`   | e-mail addresses (plus-addressing, subdomains, `mailto:`)                 |
| `ip`    | `[IP]`      | IPv4 (optionally with /prefix or :port) and IPv6 addresses                |
| `phone` | `[PHONE]`   | phone numbers (libphonenumber's `PhoneNumberMatcher`, configured regions)  |
| `money` | `[MONEY]`   | amounts with a currency ($1,200.50, €3.4M, USD 12 million, 1.2 million USD)|
|         |             | and magnitudes next to a finance word (revenue of 40k, 40k in revenue)     |
| `org`   | `[ORG]`     | configured organization names, case-insensitive, whole word, longest first |

Ordinary numbers are left alone: years, dates, times, versions (3.11), percentages, durations (15
minutes), route numbers (Route 45), epoch seconds and ids. Phone candidates from the matcher are
kept only when libphonenumber calls them valid, or when they are phone-shaped (a leading `+`, a
North-American `(555) 123-4567` / `555.123.4567` shape, or a phone word such as "call" or "tel"
just before); a match glued to letters, `_` or `-` (a piece of an id) is never a phone.

Everything is compiled once per `Redactor`; `redact_column` calls Python once per distinct value.
"""

from __future__ import annotations

import ipaddress
import re
from collections import Counter
from collections.abc import Iterable

import phonenumbers
import polars as pl

from pipelines.config.redaction import (
    DEFAULT_PHONE_REGIONS,
    KINDS,
    RedactionConfig,
    redaction_config_from,
)
from pipelines.privacy.patterns import (
    _CUE_WINDOW,
    _EMAIL,
    _FINANCE_CUE,
    _GROUPED_AMOUNT,
    _IPV4,
    _IPV6,
    _MAGNITUDE_AMOUNT,
    _MONEY,
    _NOT_PHONE,
    _PHONE_CANDIDATE,
    _PHONE_CUE,
    _PHONE_NANP,
    _TOKEN,
    _URL,
    _URL_CREDENTIALS,
    _URL_SECRET_PARAM,
    _URL_TRAILING,
    _VERSION_BEFORE,
    ANY_DIGIT,
    may_hold_phone,
)

# Kept importable from here, where callers have always found them.
__all__ = [
    "DEFAULT_PHONE_REGIONS",
    "KINDS",
    "PLACEHOLDERS",
    "RedactionConfig",
    "Redactor",
    "redact_column",
    "redaction_config_from",
]

PLACEHOLDERS: dict[str, str] = {
    "url": "[URL]",
    "token": "[TOKEN]",
    "email": "[EMAIL]",
    "ip": "[IP]",
    "phone": "[PHONE]",
    "money": "[MONEY]",
    "org": "[ORG]",
}
# Lower number wins when two candidate spans start at the same place and have the same length.
_PRIORITY = {kind: i for i, kind in enumerate(KINDS)}


class Redactor:
    """Replaces personal and confidential spans in text with typed placeholders (see module doc)."""

    def __init__(self, config: RedactionConfig | None = None) -> None:
        self.config = config or RedactionConfig()
        self.kinds = frozenset(self.config.kinds)
        names = sorted(
            {n.strip() for n in self.config.org_names if n and n.strip()},
            key=lambda n: (-len(n), n),
        )
        self._org: re.Pattern[str] | None = None
        if names and "org" in self.kinds:
            alternation = "|".join(
                r"\s+".join(re.escape(part) for part in n.split()) for n in names
            )
            self._org = re.compile(rf"(?<!\w)(?:{alternation})(?!\w)", re.IGNORECASE)
        self._regions = tuple(self.config.phone_regions)

    # -- public ----------------------------------------------------------------------------

    def redact(self, text: str, only: Iterable[str] | None = None) -> tuple[str, Counter[str]]:
        """`text` with every detected span replaced by its placeholder, and counts per kind (`only`:
        see `find`)."""
        counts: Counter[str] = Counter()
        if not text:
            return text, counts
        spans = self.find(text, only)
        if not spans:
            return text, counts
        out: list[str] = []
        pos = 0
        for start, end, kind in spans:
            out.append(text[pos:start])
            out.append(PLACEHOLDERS[kind])
            counts[kind] += 1
            pos = end
        out.append(text[pos:])
        return "".join(out), counts

    def find(self, text: str, only: Iterable[str] | None = None) -> list[tuple[int, int, str]]:
        """Non-overlapping spans `(start, end, kind)` in text order. `only` skips the other
        detectors (for callers that know those cannot match, e.g.
        pipelines/privacy/prefilter.py)."""
        candidates: list[tuple[int, int, str]] = []
        kinds = self.kinds if only is None else self.kinds & frozenset(only)
        has_digit = ANY_DIGIT.search(text) is not None
        if "url" in kinds and ("://" in text or "www." in text):
            candidates.extend(self._urls(text))
        if "token" in kinds:
            candidates.extend(self._tokens(text))
        if "email" in kinds and "@" in text:
            candidates.extend((m.start(), m.end(), "email") for m in _EMAIL.finditer(text))
        if "ip" in kinds and has_digit:
            candidates.extend(self._ips(text))
        if "phone" in kinds and has_digit:
            candidates.extend(self._phones(text))
        if "money" in kinds and has_digit:
            candidates.extend(self._money(text))
        if self._org is not None and "org" in kinds:
            candidates.extend((m.start(), m.end(), "org") for m in self._org.finditer(text))
        return _resolve(candidates)

    # -- detectors ---------------------------------------------------------------------------

    def _urls(self, text: str) -> Iterable[tuple[int, int, str]]:
        for m in _URL.finditer(text):
            start, end = m.span()
            while end > start and text[end - 1] in _URL_TRAILING:
                end -= 1
            url = text[start:end]
            if _URL_CREDENTIALS.match(url) or _URL_SECRET_PARAM.search(url):
                yield start, end, "url"

    def _tokens(self, text: str) -> Iterable[tuple[int, int, str]]:
        lowered = text.lower()
        if not any(w in lowered for w in ("bearer", "basic", "token", "key", "secret", "passw")):
            return
        for m in _TOKEN.finditer(text):
            group = 1 if m.group(1) is not None else 2
            yield m.start(group), m.end(group), "token"

    def _ips(self, text: str) -> Iterable[tuple[int, int, str]]:
        if "." in text:
            for m in _IPV4.finditer(text):
                if _VERSION_BEFORE.search(text, max(0, m.start() - 12), m.start()):
                    continue
                yield m.start(), m.end(), "ip"
        if text.count(":") >= 2:
            for m in _IPV6.finditer(text):
                candidate = m.group(1)
                if sum(c.isalnum() for c in candidate) < 2:
                    continue
                try:
                    ipaddress.IPv6Address(candidate)
                except ValueError:
                    continue
                yield m.start(), m.end(), "ip"

    def _phones(self, text: str) -> Iterable[tuple[int, int, str]]:
        if not any(
            sum(c.isdigit() for c in m.group()) >= 7 for m in _PHONE_CANDIDATE.finditer(text)
        ):
            return
        if not may_hold_phone(text):
            return  # libphonenumber is the costliest detector: skip it where no kept match can be
        seen: set[tuple[int, int]] = set()
        for region in self._regions:
            matcher = phonenumbers.PhoneNumberMatcher(
                text, region, leniency=phonenumbers.Leniency.POSSIBLE
            )
            for match in matcher:
                span = (match.start, match.end)
                if span in seen:
                    continue
                if self._is_phone(text, match):
                    seen.add(span)
                    yield match.start, match.end, "phone"

    @staticmethod
    def _is_phone(text: str, match: phonenumbers.PhoneNumberMatch) -> bool:
        raw = match.raw_string
        digits = sum(c.isdigit() for c in raw)
        if digits < 7 or digits > 15:
            return False
        before = text[match.start - 1] if match.start > 0 else " "
        after = text[match.end] if match.end < len(text) else " "
        glued_before = (
            (before.isdigit() or before in "+")
            if raw.startswith("+")
            else (before.isalnum() or before in "_-/.:")
        )
        if glued_before or after.isalnum() or after in "_-%":
            return False  # glued to an id, a path, a date or a percentage
        if _NOT_PHONE.match(raw.strip()):
            return False
        formatted = any(c in raw for c in " -.()/\u00a0") or raw.startswith("+")
        cue = _PHONE_CUE.search(text, max(0, match.start - 30), match.start) is not None
        if raw.startswith(("+", "(")) or _PHONE_NANP.match(raw):
            return True
        if cue:
            return True
        return formatted and phonenumbers.is_valid_number(match.number)

    def _money(self, text: str) -> Iterable[tuple[int, int, str]]:
        for m in _MONEY.finditer(text):
            yield m.start(), _trim_space(text, m.start(), m.end()), "money"
        cues = [m.span() for m in _FINANCE_CUE.finditer(text)]
        if not cues:
            return
        for pattern in (_MAGNITUDE_AMOUNT, _GROUPED_AMOUNT):
            for m in pattern.finditer(text):
                start, end = m.start(), _trim_space(text, m.start(), m.end())
                if any(cs - _CUE_WINDOW <= end and ce + _CUE_WINDOW >= start for cs, ce in cues):
                    if not _same_sentence_cue(text, start, end, cues):
                        continue
                    yield start, end, "money"


def _trim_space(text: str, start: int, end: int) -> int:
    while end > start and text[end - 1].isspace():
        end -= 1
    return end


def _same_sentence_cue(text: str, start: int, end: int, cues: list[tuple[int, int]]) -> bool:
    """A finance word within the window and not across a sentence end."""
    for cs, ce in cues:
        if ce <= start and start - ce <= _CUE_WINDOW and not re.search(r"[.!?;]\s", text[ce:start]):
            return True
        if cs >= end and cs - end <= _CUE_WINDOW and not re.search(r"[.!?;]\s", text[end:cs]):
            return True
    return False


def _resolve(candidates: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Greedy non-overlapping choice: leftmost start, then longest, then kind priority."""
    if not candidates:
        return []
    candidates.sort(key=lambda s: (s[0], -(s[1] - s[0]), _PRIORITY[s[2]]))
    chosen: list[tuple[int, int, str]] = []
    last_end = -1
    for start, end, kind in candidates:
        if start >= last_end and end > start:
            chosen.append((start, end, kind))
            last_end = end
    return chosen


def redact_column(
    frame: pl.DataFrame, column: str, redactor: Redactor
) -> tuple[pl.DataFrame, Counter[str]]:
    """`frame` with `column` redacted, and counts per kind over all rows (a value repeated in n rows
    counts n times). Python runs once per distinct non-null value; nulls stay null."""
    counts: Counter[str] = Counter()
    if frame.is_empty() or column not in frame.columns:
        return frame, counts
    distinct = frame.get_column(column).drop_nulls().value_counts(name="__n")
    old: list[str] = []
    new: list[str] = []
    for value, n in distinct.iter_rows():
        redacted, found = redactor.redact(value)
        if found:
            old.append(value)
            new.append(redacted)
            for kind, k in found.items():
                counts[kind] += k * n
    if not old:
        return frame, counts
    out = frame.with_columns(pl.col(column).replace(old, new))
    return out, counts
