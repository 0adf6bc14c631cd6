"""Compiled detectors for the redactor (module level: compiled once per process)."""

import re
import sys
from collections.abc import Iterator

# Every character `str.isdigit` accepts (Nd and the No digits such as superscripts), so "has a
# digit" is one C-speed search instead of a Python loop over the text.
ANY_DIGIT = re.compile(
    "[" + "".join(re.escape(chr(c)) for c in range(sys.maxunicode + 1) if chr(c).isdigit()) + "]"
)

_SECRET_PARAMS = (
    "token|access_token|id_token|refresh_token|auth_token|session_token|api_key|apikey|api-key|key|"
    "secret|client_secret|sig|signature|password|passwd|pwd|pass|auth|authorization|session|"
    "sessionid|session_id|sid|code|jwt|x-amz-signature|x-amz-credential|x-amz-security-token|"
    "x-goog-signature|x-goog-credential|sv|se|sp"
)
_URL = re.compile(r"(?i)\b(?:[a-z][a-z0-9+.\-]{1,15}://|www\.)[^\s<>\"'`\\]+")
_URL_CREDENTIALS = re.compile(r"(?i)^(?:[a-z][a-z0-9+.\-]{1,15}://)?[^/\s@?#]+@")
_URL_SECRET_PARAM = re.compile(rf"(?i)[?&#;](?:{_SECRET_PARAMS})=[^&#\s]")
_URL_TRAILING = ".,;:!?)]}'\""
_TOKEN = re.compile(
    r"(?i)\b(?:bearer|basic|token)\s+([A-Za-z0-9\-._~+/]{16,}=*)"
    r"|\b(?:api[_-]?key|access[_-]?token|refresh[_-]?token|auth[_-]?token|client[_-]?secret|"
    r"secret[_-]?key|password|passwd)\s*[=:]\s*[\"']?([^\s\"'&,;]{6,})"
)
_EMAIL = re.compile(
    r"(?<![\w.+\-])[A-Za-z0-9](?:[A-Za-z0-9._%+\-]{0,63})@"
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}(?![\w\-])"
)
_IPV4 = re.compile(
    r"(?<![\w.])(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
    r"(?:/(?:3[0-2]|[12]?\d))?(?::\d{1,5})?(?!\w|\.\d)"
)
_VERSION_BEFORE = re.compile(r"(?i)(?:\bv|\bversion|\bver\.?|\brelease)\s*$")
_IPV6 = re.compile(
    r"(?i)(?<![\w:.])\[?((?:[0-9a-f]{0,4}:){2,7}(?:[0-9a-f]{0,4}|(?:\d{1,3}\.){3}\d{1,3}))(?:%\w+)?\]?(?![\w:])"
)
# Phone: cheap prefilter (7+ digits in a phone-ish run), shapes and cue words.
_PHONE_CANDIDATE = re.compile(r"[+(]?\d[\d \t().\-/\u00a0]{5,}\d")
_PHONE_NANP = re.compile(r"^(?:\+?1[\s.\-]?)?(?:\(\d{3}\)\s?|\d{3}[\s.\-])\d{3}[\s.\-]\d{4}$")
_PHONE_CUE = re.compile(
    r"(?i)\b(?:call|called|calling|phone|tel|telephone|mobile|cell|fax|sms|whatsapp|hotline|dial|"
    r"reach (?:me|us|him|her))\.?\s*[:#]?\s*(?:is|at|on|me at|us at|me on|us on)?\s*$"
)
_NOT_PHONE = re.compile(
    r"^(?:\d{4}[\-/.]\d{1,2}[\-/.]\d{1,2}|\d{1,2}[\-/.]\d{1,2}[\-/.]\d{2,4}|\d{4}\s?[\-\u2013]\s?\d{4}|"
    r"\d{1,3}(?:\.\d{1,3}){1,3}|\d+[.,]\d+)$"
)
# Money.
_NUM = r"(?:\d{1,3}(?:,\d{2})*(?:[,.\u00a0\u202f]\d{3})+(?:[.,]\d{1,2})?|\d+(?:[.,]\d+)?)"
_MAG = (
    r"(?:\s?(?:[kKmMbB]|bn|BN|mn|MN|mm|MM|tn)(?![\w%])"
    r"|\s(?:thousand|million|billion|trillion|mio\.?|mrd\.?|grand)(?![\w%]))"
)
_SYM = r"(?:US\$|USD\$|C\$|CA\$|A\$|AU\$|NZ\$|HK\$|S\$|R\$|\$|€|£|¥|₹|₩|₽|CHF\s?)"
_CODE = r"(?:USD|EUR|GBP|JPY|CHF|CAD|AUD|NZD|INR|CNY|RMB|SEK|NOK|DKK|PLN|BRL|MXN|ZAR|SGD|HKD)"
_WORDCUR = r"(?:dollars?|euros?|pounds sterling|bucks|yen|yuan|rupees?|francs?|cents?)"
_MONEY = re.compile(
    rf"(?<![\w.,]){_SYM}\s?{_NUM}(?:{_MAG})?(?!\d)"
    rf"|(?<![\w.,$€£]){_NUM}(?:{_MAG})?\s?(?:(?:€|£|\$)(?!\s?\d)|{_CODE}\b(?!\s?\d)|{_WORDCUR}\b)"
    rf"|\b{_CODE}\s?{_NUM}(?:{_MAG})?(?![\d\w])"
)
_FINANCE_CUE = re.compile(
    r"(?i)\b(?:revenues?|sales|profits?|income|earnings|turnover|arr|mrr|budgets?|funding|raised|"
    r"raise|raising|valuation|valued|salary|salaries|wages?|price[ds]?|pricing|costs?|costing|"
    r"spend|spending|spent|paid|pay|payment|invoiced?|deal|contract|worth|loss(?:es)?|ebitda|"
    r"financing|investment|invested|fees?|fine[ds]?|bonus|compensation|sold|bought|acquired|"
    r"acquisition|debt|loan|grant|donation|refund)\b"
)
_MAGNITUDE_AMOUNT = re.compile(rf"(?<![\w.,]){_NUM}{_MAG}")
_GROUPED_AMOUNT = re.compile(r"(?<![\w.,])\d{1,3}(?:,\d{3})+(?:\.\d{1,2})?(?![\d%]|\.\d|\s?%)")
_CUE_WINDOW = 40

# Phone necessary condition (a cheap exact gate in front of libphonenumber). Every match the matcher
# can return lies inside a run of characters its pattern accepts: digits, its punctuation and lead
# characters, and the extension words (ext, extension, anexo, int, x, #, ...), whose only ASCII
# letters are a e i n o s t x. A run holds a keepable phone only if ≥7 digits lie between a start
# that is not glued on the left and an end that is not glued on the right (`Redactor._is_phone`);
# the widest such span of a run is the first valid start to the last valid end.
RUN_EXCLUDES = "_b-df-hj-mp-ru-wyzB-DF-HJ-MP-RU-WYZ"
_PHONE_RUN = re.compile(f"[^{RUN_EXCLUDES}]+")
# The same runs in Rust's regex (Polars): those with at least 7 digits (leftmost-first from a run's
# start, the match takes the whole run), and those holding a digit (Python's `isdigit`).
RUST_PHONE_RUN_7_DIGITS = rf"(?:[^{RUN_EXCLUDES}\d]*\d){{7}}[^{RUN_EXCLUDES}]*"
RUST_RUN_WITH_A_DIGIT = rf"[^{RUN_EXCLUDES}]*[\p{{Nd}}\p{{No}}][^{RUN_EXCLUDES}]*"
_ASCII_ALNUM = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_GLUE_BEFORE = _ASCII_ALNUM | frozenset("_-/.:")
_GLUE_BEFORE_PLUS = frozenset("0123456789+")
_GLUE_AFTER = _ASCII_ALNUM | frozenset("_-%")
_DIGIT = re.compile(r"\d")
_MIN_PHONE_DIGITS = 7


def _phone_start(text: str, start: int, end: int) -> int | None:
    for i in range(start, end):
        before = text[i - 1] if i else " "
        if before not in _GLUE_BEFORE or (text[i] == "+" and before not in _GLUE_BEFORE_PLUS):
            return i
    return None


def _phone_end(text: str, start: int, end: int) -> int | None:
    for i in range(end, start, -1):
        if i == len(text) or text[i] not in _GLUE_AFTER:
            return i
    return None


def phone_windows(text: str) -> Iterator[tuple[int, int]]:
    """The runs of `text` that may hold a phone `Redactor` would keep, as (start, end): each is a
    whole `_PHONE_RUN`, so libphonenumber's matcher finds in it what it finds there in the whole
    text (its pattern cannot cross a run's ends, and at `Leniency.POSSIBLE` it looks at no
    character outside its candidate but a `:ss` time suffix, which is inside the run too)."""
    for run in _PHONE_RUN.finditer(text):
        if may_keep_run(text, *run.span()):
            yield run.span()


def may_keep_run(text: str, start: int, end: int) -> bool:
    """Whether the run [start, end) of `text` may hold a phone `Redactor` would keep: at least 7
    digits between a start not glued on the left and an end not glued on the right."""
    if len(_DIGIT.findall(text, start, end)) < _MIN_PHONE_DIGITS:
        return False
    first, last = _phone_start(text, start, end), _phone_end(text, start, end)
    return (
        first is not None
        and last is not None
        and len(_DIGIT.findall(text, first, last)) >= _MIN_PHONE_DIGITS
    )


def may_hold_phone(text: str) -> bool:
    """False only when no phone `Redactor` would keep can be in `text` (ASCII-only glue sets make
    this a superset: a non-ASCII neighbour never rules a match out here)."""
    return next(phone_windows(text), None) is not None
