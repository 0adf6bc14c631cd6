"""Whether a string is a cron expression Dagster's schedules accept, without importing Dagster.

Reading settings happens in every command, the no-change build included, and importing Dagster
for its own check (`dagster._utils.schedules.is_valid_cron_string`) cost ~1.8 s of CPU each time.
This accepts the forms Dagster documents and croniter parses (five fields of `*`, `?`, numbers,
month and weekday names, ranges, steps, lists, `L` and `#`; the `@daily`-style macros) and never
one Dagster rejects (tests/unit/test_cron.py holds the two side by side).
"""

from __future__ import annotations

import re

MACROS = frozenset(
    {"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}
)
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
# (lowest, highest, names counted from lowest) per field: minute, hour, day, month, weekday
_FIELDS = ((0, 59, ()), (0, 23, ()), (1, 31, ()), (1, 12, _MONTHS), (0, 7, _DAYS))
_ITEM = re.compile(r"^(?P<range>\*|[0-9a-z]+(?:-[0-9a-z]+)?)(?:/(?P<step>[0-9]+))?$")


def _value(token: str, low: int, high: int, names: tuple[str, ...]) -> int | None:
    if token.isdigit():
        number = int(token)
        return number if low <= number <= high else None
    return names.index(token) + low if token in names else None


def _item(item: str, field: int) -> bool:
    low, high, names = _FIELDS[field]
    if item == "?" and field in (2, 4):
        return True
    if field == 2 and item == "L":
        return True
    if field == 4 and re.fullmatch(r"[0-7]#[1-5]|[0-7]L", item, re.IGNORECASE):
        return True
    found = _ITEM.match(item.lower())
    if found is None or found["step"] == "0":
        return False
    if found["range"] == "*":
        return True
    return all(_value(end, low, high, names) is not None for end in found["range"].split("-"))


def is_cron(expression: str) -> bool:
    """True when Dagster would accept `expression` as a schedule's cron string."""
    if expression.strip() in MACROS:
        return True
    fields = expression.split()
    if len(fields) != 5:
        return False
    if not all(
        item and _item(item, number)
        for number, field in enumerate(fields)
        for item in field.split(",")
    ):
        return False
    # Dagster refuses a schedule that can never fire: the 30th or 31st of February alone
    month, day = _value(fields[3].lower(), *_FIELDS[3]), _value(fields[2], *_FIELDS[2])
    return not (month == 2 and day in (30, 31))
