"""Typed field readers of the scenario adapter: text (numbers kept as their text where a logger
scores instead of labelling), objects, true/false flags, non-negative counts, [0,1] scores.
Each raises RecordError (`bad_type` / `bad_value`) naming the field."""

from __future__ import annotations

from typing import Any

from pipelines.sources.base import RecordError
from pipelines.sources.values import as_float, as_int


def present_key(obj: dict, *names: str) -> str | None:
    """The first of `names` whose value is present and not null."""
    return next((name for name in names if obj.get(name) is not None), None)


def text(value: Any, what: str, *, numbers: bool = False) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if numbers and isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    raise RecordError("bad_type", f"{what} should be a string, got {type(value).__name__}")


def label(value: Any, what: str) -> str | None:
    """A category label; a number is kept as its text (some loggers score instead of labelling)."""
    if isinstance(value, bool):
        raise RecordError("bad_type", f"{what} should be a label or a number, got {value!r}")
    return text(value, what, numbers=True)


def mapping(value: Any, what: str) -> dict | None:
    if value is None or isinstance(value, dict):
        return value
    raise RecordError("bad_type", f"{what} should be an object, got {type(value).__name__}")


def flag(value: Any, what: str) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise RecordError("bad_type", f"{what} should be true/false, got {value!r}")


def count(value: Any, what: str) -> int | None:
    """A non-negative whole number; integral floats and digit strings ("3") are accepted."""
    number = as_int(value, what)
    if number is not None and number < 0:
        raise RecordError("bad_value", f"{what} is negative: {value!r}")
    return number


def unit_score(value: Any, what: str) -> float | None:
    """A score on the documented [0,1] scale (numeric strings accepted)."""
    score = as_float(value, what)
    if score is not None and not 0.0 <= score <= 1.0:
        raise RecordError("bad_value", f"{what} is {score}, outside the documented [0,1] scale")
    return score
