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
| `card`  | `[CARD]`    | payment-card numbers: issuer prefix and length, Luhn (identifiers.py)     |
| `iban`  | `[IBAN]`    | IBANs, with or without spaces: mod 97 and the country's format            |
| `national_id` | `[NATIONAL_ID]` | US SSN, UK NINO, DE Steuer-ID, FR NIR, ES DNI/NIE, IT codice  |
|         |             | fiscale, validated by python-stdnum (bare digits only after a cue word)   |
| `address` | `[ADDRESS]` | street + number (+ postcode, town) of the US, UK, DE, FR (addresses.py)   |
| `person` | `[PERSON]` | names after an introduction, a greeting or before a sign-off              |
|         |             | (person_names.py)                                                         |

Ordinary numbers are left alone: years, dates, times, versions (3.11), percentages, durations (15
minutes), route numbers (Route 45), epoch seconds and ids. Phone candidates from the matcher are
kept only when libphonenumber calls them valid, or when they are phone-shaped (a leading `+`, a
North-American `(555) 123-4567` / `555.123.4567` shape, or a phone word such as "call" or "tel"
just before); a match glued to letters, `_` or `-` (a piece of an id) or inside a grouped number of
more than 15 digits (E.164's cap: a spaced tracking number) is never a phone. An amount without a
currency is money only next to a finance word in its sentence and when it counts no noun ("sold 15
million copies" stays).

libphonenumber runs on candidate runs, not on whole texts (`redact_many` finds them for many
texts at once in Polars, `phone_runs`): the runs of characters its pattern accepts that hold 7
digits and pass the glue rule (`patterns.phone_windows`), each distinct run matched once per
region; a text where the matcher could run out of tries is matched whole.

Everything is compiled once per `Redactor`.
"""

from __future__ import annotations

import ipaddress
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence

import phonenumbers
import polars as pl
from phonenumbers.phonenumbermatcher import _INNER_MATCHES

from pipelines.config.redaction import (
    DEFAULT_PHONE_REGIONS,
    KINDS,
    RedactionConfig,
    redaction_config_from,
)
from pipelines.privacy.addresses import addresses
from pipelines.privacy.identifiers import cards, ibans, national_ids
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
    _PHONE_RUN,
    _TOKEN,
    _URL,
    _URL_CREDENTIALS,
    _URL_SECRET_PARAM,
    _URL_TRAILING,
    _VERSION_BEFORE,
    ANY_DIGIT,
    RUST_PHONE_RUN_7_DIGITS,
    RUST_RUN_WITH_A_DIGIT,
    may_hold_phone,
    may_keep_run,
    phone_windows,
)
from pipelines.privacy.person_names import persons

# Kept importable from here, where callers have always found them.
__all__ = [
    "DEFAULT_PHONE_REGIONS",
    "KINDS",
    "PLACEHOLDERS",
    "RedactionConfig",
    "Redactor",
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
    "card": "[CARD]",
    "iban": "[IBAN]",
    "national_id": "[NATIONAL_ID]",
    "address": "[ADDRESS]",
    "person": "[PERSON]",
    "known_name": "[PERSON]",  # pipelines/privacy/known_names.py, redacted per episode
}
# Lower number wins when two candidate spans start at the same place and have the same length.
_PRIORITY = {kind: i for i, kind in enumerate(KINDS)}
# A match of libphonenumber's matcher: start, end, raw string, whether its number is valid.
_Match = tuple[int, int, str, bool]
# A text's phone runs found in Polars (`phone_runs`): its runs with 7 digits, and whether the
# matcher might run out of tries on it.
PhoneRuns = tuple[list[str], bool]
_MAX_TRIES = 65535  # PhoneNumberMatcher's default `max_tries`, the one the redactor uses
# Distinct (window, region) results kept per Redactor: texts repeat their numbers (the same floats
# and ids in many decision contexts), and a window's matches are ~1 ms of libphonenumber.
_WINDOW_CACHE_SIZE = 200_000
# The closed-class words (articles, determiners, prepositions, auxiliaries, conjunctions) and the
# period adverbs that may follow a currency-less amount; any other word after it is what it counts.
_AMOUNT_FOLLOWER = re.compile(
    r"a|an|the|this|that|these|those|last|next|each|every|per|in|of|on|at|to|for|from|by|with|"
    r"without|over|under|above|below|about|around|within|into|through|during|since|until|till|"
    r"before|after|and|or|but|nor|so|yet|than|as|is|was|were|are|be|been|being|has|had|have|"
    r"will|would|could|should|may|might|can|did|does|do|annually|yearly|monthly|weekly|daily|"
    r"annual|net|gross|total"
)
_NEXT_WORD = re.compile(r"[ \t\u00a0]?([^\W\d_]+)")
# E.164 caps a phone number at 15 digits: a longer grouped number is something else.
_MAX_PHONE_DIGITS = 15
_GROUP_SEPARATORS = " .-/\u00a0"


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
        self._window_cache: dict[tuple[str, str], tuple[_Match, ...]] = {}
        # The `phone_runs` of the texts `redact_many` is redacting (found in Python otherwise).
        self._phone_runs: dict[str, PhoneRuns] = {}

    # -- public ----------------------------------------------------------------------------

    def redact_many(
        self, items: Sequence[tuple[str, Iterable[str] | None]]
    ) -> list[tuple[str, Counter[str]]]:
        """`redact(text, only)` of each item, with the candidate phone runs of all texts found at
        once by Rust regex (`phone_runs`): Python then runs libphonenumber on those runs alone."""
        texts = list({text for text, only in items if text and "phone" in self._kinds(only)})
        self._phone_runs = dict(zip(texts, phone_runs(texts), strict=True))
        try:
            return [self.redact(text, only) for text, only in items]
        finally:
            self._phone_runs = {}

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
        kinds = self._kinds(only)
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
            candidates.extend(self._phones(text, self._phone_runs.get(text)))
        if "money" in kinds and has_digit:
            candidates.extend(self._money(text))
        if "card" in kinds and has_digit:
            candidates.extend(cards(text))
        if "iban" in kinds and has_digit:
            candidates.extend(ibans(text))
        if "national_id" in kinds and has_digit:
            candidates.extend(national_ids(text))
        if "address" in kinds and has_digit:
            candidates.extend(addresses(text))
        if "person" in kinds:
            candidates.extend(persons(text))
        if self._org is not None and "org" in kinds:
            candidates.extend((m.start(), m.end(), "org") for m in self._org.finditer(text))
        return _resolve(candidates)

    def _kinds(self, only: Iterable[str] | None) -> frozenset[str]:
        return self.kinds if only is None else self.kinds & frozenset(only)

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

    def _phones(self, text: str, runs: PhoneRuns | None = None) -> Iterable[tuple[int, int, str]]:
        if not any(
            sum(c.isdigit() for c in m.group()) >= 7 for m in _PHONE_CANDIDATE.finditer(text)
        ):
            return
        if runs is None:
            if not may_hold_phone(text):
                return  # libphonenumber is the costliest detector: skip it where no kept match can be
            windows = list(phone_windows(text))
            many = _may_run_out_of_tries(text)
        else:
            strings, many = runs
            windows = list(_located(text, strings))
            if not windows:
                return  # as `may_hold_phone` (the same runs, the same test)
        if not windows or many:
            found = self._whole_text_matches(text)
        else:
            found = self._window_matches(text, windows)
        seen: set[tuple[int, int]] = set()
        for start, end, raw, valid in found:
            if (start, end) not in seen and _is_phone(text, start, end, raw, valid):
                seen.add((start, end))
                yield start, end, "phone"

    def _whole_text_matches(self, text: str) -> Iterator[_Match]:
        """What libphonenumber's matcher finds in the whole of `text`, region by region."""
        for region in self._regions:
            matcher = phonenumbers.PhoneNumberMatcher(
                text, region, leniency=phonenumbers.Leniency.POSSIBLE
            )
            for m in matcher:
                yield m.start, m.end, m.raw_string, phonenumbers.is_valid_number(m.number)

    def _window_matches(self, text: str, windows: list[tuple[int, int]]) -> Iterator[_Match]:
        """`_whole_text_matches` of `text` found in `windows` alone (`phone_windows`: no phone
        the redactor keeps lies outside them, and in each the matcher finds what it finds there
        in the whole text), each distinct window matched once per Redactor."""
        for region in self._regions:
            for offset, end in windows:
                for start, stop, raw, valid in self._matches_in(text[offset:end], region):
                    yield offset + start, offset + stop, raw, valid

    def _matches_in(self, window: str, region: str) -> tuple[_Match, ...]:
        key = (window, region)
        found = self._window_cache.get(key)
        if found is None:
            matcher = phonenumbers.PhoneNumberMatcher(
                window, region, leniency=phonenumbers.Leniency.POSSIBLE
            )
            found = tuple(
                (m.start, m.end, m.raw_string, phonenumbers.is_valid_number(m.number))
                for m in matcher
            )
            if len(self._window_cache) >= _WINDOW_CACHE_SIZE:
                self._window_cache.clear()
            self._window_cache[key] = found
        return found

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
                    if not _same_sentence_cue(text, start, end, cues) or _counts_a_noun(text, end):
                        continue
                    yield start, end, "money"


def _is_phone(text: str, start: int, end: int, raw: str, valid: bool) -> bool:
    """Whether the matcher's `raw` at [start, end) of `text` is kept as a phone (`valid`:
    libphonenumber calls its number valid)."""
    digits = sum(c.isdigit() for c in raw)
    if digits < 7 or digits > _MAX_PHONE_DIGITS:
        return False
    before = text[start - 1] if start > 0 else " "
    after = text[end] if end < len(text) else " "
    glued_before = (
        (before.isdigit() or before in "+")
        if raw.startswith("+")
        else (before.isalnum() or before in "_-/.:")
    )
    if glued_before or after.isalnum() or after in "_-%":
        return False  # glued to an id, a path, a date or a percentage
    if _grouped_digits(text, start, end) > _MAX_PHONE_DIGITS:
        return False  # a piece of a longer grouped number (a spaced 22-digit tracking number)
    if _NOT_PHONE.match(raw.strip()):
        return False
    formatted = any(c in raw for c in " -.()/\u00a0") or raw.startswith("+")
    cue = _PHONE_CUE.search(text, max(0, start - 30), start) is not None
    if raw.startswith(("+", "(")) or _PHONE_NANP.match(raw):
        return True
    if cue:
        return True
    return formatted and valid


def _grouped_digits(text: str, start: int, end: int) -> int:
    """The digits of the grouped number [start, end) of `text` is part of: extended over digits and
    over single separators between two digits on either side (a `+` or `(` lead is a hard start)."""
    while start > 0 and text[start].isdigit():
        if text[start - 1].isdigit():
            start -= 1
        elif text[start - 1] in _GROUP_SEPARATORS and start > 1 and text[start - 2].isdigit():
            start -= 2
        else:
            break
    while end < len(text) and text[end - 1].isdigit():
        if text[end].isdigit():
            end += 1
        elif text[end] in _GROUP_SEPARATORS and end + 1 < len(text) and text[end + 1].isdigit():
            end += 2
        else:
            break
    return sum(c.isdigit() for c in text[start:end])


def phone_runs(texts: list[str]) -> list[PhoneRuns]:
    """Per text, found by Rust regex over all of them at once: its runs of characters
    libphonenumber's pattern accepts that hold at least 7 digits (Rust's `\\d` has every digit of
    Python's, so these include every run `phone_windows` keeps), and whether the matcher might
    run out of tries on it (`_may_run_out_of_tries`, over the same runs)."""
    inner = len(_INNER_MATCHES)
    n = pl.element().str.len_chars().cast(pl.Int64)
    text = pl.col("text")
    found = pl.DataFrame({"text": texts}, schema={"text": pl.String}).select(
        text.str.extract_all(RUST_PHONE_RUN_7_DIGITS).alias("runs"),
        (
            text.str.extract_all(RUST_RUN_WITH_A_DIGIT)
            .list.eval(n * (1 + inner) + inner * n * (n + 1) // 2)
            .list.sum()
            >= _MAX_TRIES
        ).alias("many"),
    )
    return list(zip(found["runs"].to_list(), found["many"].to_list(), strict=True))


def _located(text: str, runs: list[str]) -> Iterator[tuple[int, int]]:
    """(start, end) of each of `text`'s `runs` (in text order) that `may_keep_run`. Each is found
    from where the one before ended: a maximal run with 7 digits cannot occur inside the text
    between two of them."""
    pos = 0
    for run in runs:
        start = text.index(run, pos)
        pos = start + len(run)
        if may_keep_run(text, start, pos):
            yield start, pos


def _may_run_out_of_tries(text: str) -> bool:
    """Whether libphonenumber's matcher might give up on `text` before its end (it stops after
    `_MAX_TRIES` failed candidates, so a text with very many numbers keeps its later phones):
    then only the whole text gives what it gives. Sound bound: every candidate starts at a
    distinct place of a run holding a digit and ends inside it, and costs at most one try for
    itself and, per inner pattern, one plus one per place it matches inside the candidate."""
    inner = len(_INNER_MATCHES)
    bound = 0
    for run in _PHONE_RUN.finditer(text):
        if ANY_DIGIT.search(text, *run.span()) is None:
            continue
        n = run.end() - run.start()
        bound += n * (1 + inner) + inner * n * (n + 1) // 2
        if bound >= _MAX_TRIES:
            return True
    return False


def _trim_space(text: str, start: int, end: int) -> int:
    while end > start and text[end - 1].isspace():
        end -= 1
    return end


def _counts_a_noun(text: str, end: int) -> bool:
    """Whether the amount ending at `end` counts the word after it ("sold 15 million copies"): a
    currency-less amount is money only before the end of a clause, a function word ("40k in
    revenue", "5M last year") or a finance word ("a 2bn valuation")."""
    word = _NEXT_WORD.match(text, end)
    if word is None:
        return False
    following = word.group(1).lower()
    return not (_AMOUNT_FOLLOWER.fullmatch(following) or _FINANCE_CUE.fullmatch(following))


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
