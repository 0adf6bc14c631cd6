"""Later ratings of decisions (`turnlake decision rate`): `ratings/**/*.jsonl` under the raw root,
append-only, one outcome event per line:

    {"event_id": "...", "decision_id": "...", "rating": 4, "scale": "1-5",
     "rated_by": "user", "rated_at": "2025-03-05T10:00:00+00:00", "reason": "..."}

`scale` is stated (`0-1` or `1-5`), so no evidence has to settle it; a rating outside its scale,
an unknown scale or rater kind is `bad_value`, a missing field `missing_field`. Each valid line
is one `decision_rating_events` row; silver turns it into a `rating` feedback row and applies
the supersede rule (`pipelines.transforms.decision.rating_events`).
"""

from __future__ import annotations

from typing import Any

from pipelines.config.settings import Settings
from pipelines.sources.base import (
    ParseResult,
    QuarantineRow,
    RawFile,
    RecordError,
    dumps_or_none,
    quarantine_row,
)
from pipelines.sources.jsonio import Span, read_jsonl
from pipelines.sources.values import as_float, expect_type, parse_ts, require, unknown_fields

FOLDER = "ratings"
RATINGS_TABLE = "decision_rating_events"
RATING_SCALES = {"0-1": (0.0, 1.0), "1-5": (1.0, 5.0)}
RATERS = ("user", "system", "community")
_FIELDS = frozenset(
    ("event_id", "decision_id", "rating", "scale", "rated_by", "rated_at", "reason")
)


def _one_of(record: dict, name: str, allowed: tuple[str, ...]) -> str:
    value = expect_type(require(record, name), str, name)
    if value not in allowed:
        raise RecordError("bad_value", f"{name} {value!r} is not one of {', '.join(allowed)}")
    return value


def rating_event_row(record: dict, tz: str) -> dict[str, Any]:
    """The bronze columns of one rating event; RecordError if it breaks a rule above."""
    scale = _one_of(record, "scale", tuple(RATING_SCALES))
    rating = as_float(require(record, "rating"), "rating")
    low, high = RATING_SCALES[scale]
    if rating is None or not low <= rating <= high:
        raise RecordError("bad_value", f"rating {rating} is outside its scale {scale}")
    rated_at = parse_ts(require(record, "rated_at"), tz)
    if rated_at is None:
        raise RecordError("missing_field", "missing field 'rated_at'")
    reason = record.get("reason")
    return {
        "event_id": expect_type(require(record, "event_id"), str, "event_id"),
        "decision_id": expect_type(require(record, "decision_id"), str, "decision_id"),
        "rating": rating,
        "scale": scale,
        "rated_by": _one_of(record, "rated_by", RATERS),
        "rated_at": rated_at,
        "reason": None if reason is None else expect_type(reason, str, "reason"),
        "extra": dumps_or_none(unknown_fields(record, _FIELDS)),
    }


def parse_ratings(
    file: RawFile, data: bytes, settings: Settings, start: int | Span = 0
) -> ParseResult:
    """One ratings file → rating event rows, or a quarantine row per bad line (those from byte
    `start` on: the tail of a file that grew)."""
    read = read_jsonl(file, data, settings.limits, start=start)
    tz = settings.timezone_for("decision")
    rows: list[dict[str, Any]] = []
    quarantine: list[QuarantineRow] = list(read.quarantine)
    for unit, record in read.records:
        try:
            expect_type(record, dict, "a rating event")
            row = rating_event_row(record, tz)
        except RecordError as err:
            quarantine.append(quarantine_row(file, unit.locator, err, record, settings.limits))
            continue
        rows.append({"file": file.rel_path, "locator": unit.locator, "line": unit.line, **row})
    return ParseResult(
        records_read=read.records_read,
        rows={RATINGS_TABLE: rows},
        quarantine=quarantine,
        unparsed=len(read.quarantine),
    )
