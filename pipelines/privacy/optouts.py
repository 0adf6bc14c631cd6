"""The opt-out registry (`<raw root>/consent/optouts.jsonl`) and withholding opted-out subjects.

One JSON object per line: `{"subject_kind": "participant" | "actor" | "scenario" | "conversation",
"subject_id": "…", "opted_out_at": "<ISO time>"}`. Bad lines never crash the build: they come back
as `OptOutProblem`s (line number, error kind, message; never the subject id). A line with a valid
kind and id but a missing or unreadable `opted_out_at` is honoured all the same (consent wins over
a bad timestamp) and also reported.

`withhold(silver, optouts)` removes every row about an opted-out subject from the silver tables (the
mapping of kinds onto tables is in `pipelines.privacy.subjects`) and returns counts per table only.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import orjson
import polars as pl

from pipelines.privacy.subjects import (
    SUBJECT_KINDS,
    Footprint,
    rows_mask,
    subject_footprint,
)
from pipelines.sources.listing import root_of
from pipelines.storage.uri import is_remote

OPTOUTS_FILE = Path("consent") / "optouts.jsonl"
OPTOUT_SCHEMA: dict[str, pl.DataType] = {
    "subject_kind": pl.String(),
    "subject_id": pl.String(),
    "opted_out_at": pl.Datetime("us", "UTC"),
    "line": pl.Int64(),
}
MAX_LINE_BYTES = 64 * 1024


@dataclass(frozen=True)
class OptOutProblem:
    """A line of the registry that could not be read as an opt-out (or only partly)."""

    line: int
    error_kind: str  # invalid_json, not_an_object, missing_field, bad_value, too_large
    message: str
    honoured: bool = False  # True: the opt-out still applies (only its timestamp was bad)


def empty_optouts() -> pl.DataFrame:
    """An opt-out frame with no rows."""
    return pl.DataFrame(schema=OPTOUT_SCHEMA)


def load_optouts(raw_root: Path) -> tuple[pl.DataFrame, list[OptOutProblem]]:
    """Opt-outs under `raw_root/consent/optouts.jsonl`, one row per distinct (kind, id) with the
    earliest `opted_out_at`, and the problems found. No file: no opt-outs and no problems."""
    path = root_of(raw_root) / OPTOUTS_FILE
    if not path.exists():
        return empty_optouts(), []
    return parse_optouts(path.read_bytes())


def parse_optouts(data: bytes) -> tuple[pl.DataFrame, list[OptOutProblem]]:
    """`load_optouts` on the bytes of a registry file (UTF-8, optional BOM, LF or CRLF)."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    rows: list[dict] = []
    problems: list[OptOutProblem] = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        line = raw.strip()
        if not line:
            continue
        row, problem = _parse_line(number, line)
        if problem is not None:
            problems.append(problem)
        if row is not None:
            rows.append(row)
    if not rows:
        return empty_optouts(), problems
    frame = (
        pl.DataFrame(rows, schema=OPTOUT_SCHEMA)
        .sort("subject_kind", "subject_id", "opted_out_at", "line", nulls_last=True)
        .unique(["subject_kind", "subject_id"], keep="first", maintain_order=True)
    )
    return frame, problems


def _parse_line(number: int, line: bytes) -> tuple[dict | None, OptOutProblem | None]:
    """One non-empty registry line: its opt-out row (None if rejected) and its problem, if any."""
    if len(line) > MAX_LINE_BYTES:
        return None, OptOutProblem(
            number, "too_large", f"line is {len(line)} bytes (limit {MAX_LINE_BYTES})"
        )
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        return None, OptOutProblem(number, "invalid_json", f"not valid JSON: {exc.msg}")
    if not isinstance(obj, dict):
        return None, OptOutProblem(
            number, "not_an_object", f"expected a JSON object, got {type(obj).__name__}"
        )
    kind = obj.get("subject_kind")
    subject = obj.get("subject_id")
    if kind is None or subject is None:
        missing = [k for k in ("subject_kind", "subject_id") if obj.get(k) is None]
        return None, OptOutProblem(number, "missing_field", f"missing {', '.join(missing)}")
    if not isinstance(kind, str) or kind.strip().lower() not in SUBJECT_KINDS:
        return None, OptOutProblem(
            number, "bad_value", f"subject_kind must be one of {', '.join(SUBJECT_KINDS)}"
        )
    if isinstance(subject, bool) or not isinstance(subject, str | int) or not str(subject).strip():
        return None, OptOutProblem(number, "bad_value", "subject_id must be a non-empty string")
    when, error = _parse_time(obj.get("opted_out_at"))
    problem = None
    if error:
        problem = OptOutProblem(
            number, "bad_value", f"opted_out_at {error}; opt-out honoured", honoured=True
        )
    row = {
        "subject_kind": kind.strip().lower(),
        "subject_id": str(subject).strip(),
        "opted_out_at": when,
        "line": number,
    }
    return row, problem


def _parse_time(value: object) -> tuple[datetime | None, str | None]:
    if value is None:
        return None, "is missing"
    if not isinstance(value, str):
        return None, "is not an ISO time string"
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None, "is not an ISO time"
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC), None


def withhold(
    silver: dict[str, pl.DataFrame], optouts: pl.DataFrame, footprint: Footprint | None = None
) -> tuple[dict[str, pl.DataFrame], dict[str, int]]:
    """Silver tables without any row about an opted-out subject, and rows withheld per table
    (every given table appears, 0 when untouched; counts only, never ids).

    Episodes that keep some turns have `n_turns` recounted. Contexts go only when no remaining
    decision references them. Tables other than the known silver ones are filtered by their key
    columns (see `subjects.rows_mask`). `footprint`: the subjects' footprint over the whole of
    silver, when `silver` is only some of its partitions."""
    counts = {name: 0 for name in silver}
    if optouts.is_empty() and footprint is None:
        return dict(silver), counts
    fp = footprint or subject_footprint(silver, optouts.select("subject_kind", "subject_id"))
    out: dict[str, pl.DataFrame] = {}
    for name, frame in silver.items():
        kept = frame.filter(~rows_mask(name, frame, fp))
        counts[name] = frame.height - kept.height
        out[name] = kept
    if "episodes" in out and "turns" in out and counts.get("turns", 0):
        lost = set(silver["turns"].get_column("episode_id").unique().to_list()) - set(
            out["turns"].get_column("episode_id").unique().to_list()
        ) | set(
            silver["turns"]
            .filter(pl.col("turn_id").is_in(pl.Series(sorted(fp.turns), dtype=pl.String)))
            .get_column("episode_id")
            .unique()
            .to_list()
        )
        out["episodes"] = _recount_turns(out["episodes"], out["turns"], lost)
    return out, counts


def _recount_turns(episodes: pl.DataFrame, turns: pl.DataFrame, touched: set[str]) -> pl.DataFrame:
    """`n_turns` recounted for the `touched` episodes (those that lost turns); others unchanged."""
    if "n_turns" not in episodes.columns or not touched:
        return episodes
    per = turns.group_by("episode_id").agg(pl.len().cast(pl.Int64).alias("__n"))
    hit = pl.col("episode_id").is_in(pl.Series(sorted(touched), dtype=pl.String))
    return (
        episodes.join(per, on="episode_id", how="left", maintain_order="left")
        .with_columns(
            pl.when(hit)
            .then(pl.col("__n").fill_null(0))
            .otherwise(pl.col("n_turns"))
            .alias("n_turns")
        )
        .drop("__n")
        .select(episodes.columns)
    )


def append_to_registry(raw_root: Path, line: bytes) -> None:
    """Append one line to the registry. S3 has no append: the object is rewritten whole, by
    compare-and-swap so that two writers appending at once both keep their line."""
    if not is_remote(raw_root):
        registry = Path(raw_root) / OPTOUTS_FILE
        registry.parent.mkdir(parents=True, exist_ok=True)
        with registry.open("ab") as fh:
            fh.write(line)
        return
    from pipelines.storage.objects import ObjectRoot, append_bytes

    append_bytes(ObjectRoot.parse(str(raw_root)), OPTOUTS_FILE.as_posix(), line)
