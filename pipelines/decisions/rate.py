"""`turnlake decision rate`: one outcome event appended to `<raw root>/ratings/ratings.jsonl`.

Raw files are never edited: the event is one whole line written by a single `write` on a file
opened with O_APPEND, so concurrent raters never interleave or overwrite each other's lines, then
fsynced. Under an S3 raw root (no append there) the object is rewritten whole by
compare-and-swap (`objects.append_bytes`), which keeps every concurrent rater's line too. The
next build reads it as feedback (`pipelines.sources.decision.ratings`).
"""

from __future__ import annotations

import os
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from pipelines.sources.decision.ratings import FOLDER, RATERS, RATING_SCALES
from pipelines.storage.uri import is_remote

RATINGS_FILE = f"{FOLDER}/ratings.jsonl"


class BadRating(ValueError):
    """A rating outside its scale, an unknown scale or rater kind."""


def rating_event(
    decision_id: str,
    rating: float,
    scale: str,
    rated_by: str,
    reason: str | None,
) -> dict[str, Any]:
    """The event line's object; `BadRating` says what is wrong with the rating."""
    if scale not in RATING_SCALES:
        raise BadRating(f"scale {scale!r} is not one of {', '.join(RATING_SCALES)}")
    if rated_by not in RATERS:
        raise BadRating(f"rater kind {rated_by!r} is not one of {', '.join(RATERS)}")
    low, high = RATING_SCALES[scale]
    if not low <= rating <= high:
        raise BadRating(f"rating {rating:g} is outside the {scale} scale")
    return {
        "event_id": str(uuid.uuid4()),
        "decision_id": decision_id,
        "rating": rating,
        "scale": scale,
        "rated_by": rated_by,
        "rated_at": datetime.now(UTC).isoformat(),
        "reason": reason,
    }


def append_event(raw_root: Path, event: dict[str, Any]) -> Path:
    """Append `event` as one line to the ratings file (created when missing); returns its path
    (an S3 `UPath` under an S3 raw root)."""
    path = raw_root / RATINGS_FILE
    line = orjson.dumps(event) + b"\n"
    if is_remote(raw_root):
        from pipelines.storage.objects import ObjectRoot, append_bytes

        append_bytes(ObjectRoot.parse(str(raw_root)), RATINGS_FILE, line)
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        if os.write(fd, line) != len(line):
            raise OSError(f"short write to {path}")
        os.fsync(fd)
    finally:
        os.close(fd)
    return path
