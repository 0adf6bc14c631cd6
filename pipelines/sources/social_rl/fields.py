"""Typed field readers and located errors shared by the social_rl record parsers."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from pipelines.sources.base import RecordError, dumps
from pipelines.sources.values import as_float, as_int, expect_type

# Feedback scores are documented in [0, 1]; float noise may land a hair outside.
SCORE_TOLERANCE = 1e-9


class LocatedError(RecordError):
    """A RecordError that knows the record path (e.g. `messages[3]`) of the offending part."""

    def __init__(self, path: str, err: RecordError, item: Any):
        # The path is only prefixed when the message does not already name it.
        super().__init__(err.kind, err.message if path in err.message else f"{path}: {err.message}")
        self.path = path
        self.item = item


def located(path: str, parse: Callable[[], Any], item: Any = None) -> Any:
    """Run `parse`; a RecordError inside it gets `path` (innermost path wins)."""
    try:
        return parse()
    except LocatedError:
        raise
    except RecordError as err:
        raise LocatedError(path, err, item) from None


def each(items: Iterable[tuple[str, Any]], parse: Callable[[Any], Any]) -> list[Any]:
    return [located(path, lambda item=item: parse(item), item) for path, item in items]


def opt_str(record: dict, name: str) -> str | None:
    value = record.get(name)
    return None if value is None else expect_type(value, str, name)


def opt_count(value: Any, what: str) -> int | None:
    count = as_int(value, what)
    if count is not None and count < 0:
        raise RecordError("bad_value", f"{what} is negative: {count}")
    return count


def opt_score(value: Any, what: str) -> float | None:
    score = as_float(value, what)
    if score is not None and not -SCORE_TOLERANCE <= score <= 1 + SCORE_TOLERANCE:
        raise RecordError("bad_value", f"{what} is {score}, outside [0, 1]")
    return score


def opt_bool(value: Any, what: str, default: bool = False) -> bool:
    return default if value is None else expect_type(value, bool, what)


def json_text(value: Any) -> str | None:
    """JSON text of a nested value; None and {} stay null (nothing to keep)."""
    if value is None or value == {}:
        return None
    if isinstance(value, float) and not math.isfinite(value):
        raise RecordError("bad_value", f"value is not finite: {value!r}")
    return dumps(value)


def opt_dict(value: Any, what: str) -> dict:
    return {} if value is None else expect_type(value, dict, what)
