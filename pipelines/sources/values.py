"""Reading typed values out of a raw record, the same way in every adapter: timestamps to aware
UTC, numbers (also written as strings) to float / 64-bit int, required fields under alternative
spellings, and fields an adapter does not map. Anything else raises RecordError with the kind
(`missing_field`, `bad_type`, `bad_value`) a quarantine row carries.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from pipelines.sources.base import RecordError

# ---------------------------------------------------------------- timestamps

_MIN_TS = datetime(1990, 1, 1, tzinfo=UTC)
_MAX_TS = datetime(2100, 1, 1, tzinfo=UTC)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def parse_ts(value: Any, tz: str = "UTC") -> datetime | None:
    """Normalise a source timestamp to an aware UTC datetime (microseconds).

    Accepts ISO-8601 with `Z`, with an offset or naive (read in `tz`), and epoch numbers in
    seconds, milliseconds or microseconds (as numbers or numeric strings). None/"" → None.
    Raises RecordError(bad_type | bad_value) for anything else, including absurd dates.
    """
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise RecordError("bad_type", f"timestamp is a boolean: {value!r}")
    if isinstance(value, str):
        text = value.strip()
        number = None
        if ":" not in text:  # no number has one: an ISO time skips the failing float()
            try:
                number = float(text)
            except ValueError:
                pass
        if number is not None:
            return parse_ts(number, tz)
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            raise RecordError("bad_value", f"unparseable timestamp {value!r}") from None
        if parsed.tzinfo is None:
            # "UTC" as UTC itself: the same instant, without the zone lookup and its conversion
            parsed = parsed.replace(tzinfo=UTC if tz == "UTC" else ZoneInfo(tz))
        try:
            result = parsed.astimezone(UTC)
        except OverflowError:  # year 1 or 9999 pushed past the calendar by its offset
            raise RecordError("bad_value", f"timestamp out of range: {value!r}") from None
    elif isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise RecordError("bad_value", f"timestamp is not finite: {value!r}")
        magnitude = abs(value)
        if magnitude < 1e11:
            seconds = value
        elif magnitude < 1e14:
            seconds = value / 1e3
        else:
            seconds = value / 1e6
        try:
            result = _EPOCH + timedelta(seconds=seconds)
        except OverflowError:
            raise RecordError("bad_value", f"timestamp out of range: {value!r}") from None
    else:
        raise RecordError("bad_type", f"timestamp has type {type(value).__name__}")
    if not _MIN_TS <= result < _MAX_TS:
        raise RecordError("bad_value", f"timestamp {value!r} is outside 1990–2100")
    return result


# ---------------------------------------------------------------- field access


def require(record: dict, *names: str) -> Any:
    """The first present, non-null field among `names` (alternative spellings), else
    missing_field."""
    for name in names:
        value = record.get(name)
        if value is not None:
            return value
    raise RecordError("missing_field", f"missing field {' / '.join(repr(n) for n in names)}")


def first_of(record: dict, *names: str, default: Any = None) -> Any:
    for name in names:
        value = record.get(name)
        if value is not None:
            return value
    return default


def expect_type(value: Any, types: type | tuple[type, ...], what: str) -> Any:
    if not isinstance(value, types):
        names = types.__name__ if isinstance(types, type) else "/".join(t.__name__ for t in types)
        raise RecordError("bad_type", f"{what} should be {names}, got {type(value).__name__}")
    return value


def as_float(value: Any, what: str) -> float | None:
    """Numbers stored as strings are accepted ("5" → 5.0); NaN/inf and non-numbers are not."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise RecordError("bad_type", f"{what} is a boolean")
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise RecordError("bad_type", f"{what} is not a number: {value!r}") from None
    if not isinstance(value, (int, float)):
        raise RecordError("bad_type", f"{what} should be a number, got {type(value).__name__}")
    if not math.isfinite(value):
        raise RecordError("bad_value", f"{what} is not finite: {value!r}")
    return float(value)


INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def int64(number: int, what: str) -> int:
    """An integer that fits the Int64 bronze columns (JSON allows any size), else bad_value."""
    if not INT64_MIN <= number <= INT64_MAX:
        raise RecordError("bad_value", f"{what} is outside the 64-bit integer range: {number}")
    return number


def as_int(value: Any, what: str) -> int | None:
    """Whole numbers, also stored as strings ("5") or as integral floats (5.0); "five" is not."""
    if isinstance(value, int) and not isinstance(value, bool):
        return int64(value, what)  # exact: no round trip through float
    number = as_float(value, what)
    if number is None:
        return None
    if not number.is_integer():
        raise RecordError("bad_value", f"{what} should be a whole number, got {value!r}")
    return int64(int(number), what)


def unknown_fields(record: dict, known: set[str] | frozenset[str]) -> dict | None:
    """Fields an adapter does not map: kept verbatim in an `extra` JSON column."""
    extra = {k: v for k, v in record.items() if k not in known}
    return extra or None
