"""The validation ledger: a check that passed on exactly these inputs is not run again.

Bronze parts, silver/gold generations and releases are immutable once written, so a check whose
inputs fingerprint (what it reads + the engine digest, storage/engine.py) equals the one recorded
after its last pass would read the same bytes and reach the same verdict. The ledger keeps one
small JSON file per check under `<data root>/.turnlake/validated/`, written atomically; failures
are never recorded (a failing check also drops its entry), and `TURNLAKE_REVALIDATE=1` ignores
the ledger.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from pipelines.storage.files import write_bytes_atomic
from pipelines.storage.fingerprint import (
    fingerprint,
    sha256_file,
    stat_part,
)
from pipelines.storage.layout import Layout

REVALIDATE_ENV = "TURNLAKE_REVALIDATE"


class Markdown(str):
    """Metadata text to show as markdown (the Dagster layer renders it)."""


@dataclass(frozen=True)
class Verdict:
    passed: bool
    metadata: dict[str, Any] = field(default_factory=dict)


def revalidate_requested() -> bool:
    return os.environ.get(REVALIDATE_ENV, "").strip().lower() in {"1", "true", "yes"}


@contextmanager
def revalidation(enabled: bool) -> Iterator[None]:
    """Force full re-validation for the duration of the block (the CLI's `--revalidate`)."""
    previous = os.environ.get(REVALIDATE_ENV)
    if enabled:
        os.environ[REVALIDATE_ENV] = "1"
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(REVALIDATE_ENV, None)
        else:
            os.environ[REVALIDATE_ENV] = previous


# ---------------------------------------------------------------- fingerprints


def stat_lines(paths: Iterable[Path], root: Path) -> list[str]:
    """Where (resolved, relative to `root` so a copied data root still matches), size and mtime of
    immutable files: their names are content- or run-addressed, so this identifies their bytes."""
    return [stat_part(path, root) for path in paths]


def content_lines(paths: Iterable[Path]) -> list[str]:
    """sha256 of each file's bytes, for small files rewritten by every run with the same content."""
    return [f"{p.name}|{sha256_file(p)}" if p.exists() else f"{p.name}|missing" for p in paths]


def inputs_digest(input_lines: Iterable[str], code: str) -> str:
    return fingerprint([code, *input_lines])


# ---------------------------------------------------------------- the ledger


def ledger_entry(data_root: Path, check_id: str) -> Path:
    return Layout(data_root).ledger_entry(check_id)


def recall(data_root: Path, check_id: str, digest: str) -> Verdict | None:
    """The recorded pass of `check_id` on `digest`, marked as reused; None if there is none."""
    path = ledger_entry(data_root, check_id)
    try:
        entry = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    if not isinstance(entry, dict) or entry.get("digest") != digest:
        return None
    metadata = {
        **entry.get("metadata", {}),
        "reused": True,
        "validated_in_run": entry.get("run_id", ""),
    }
    return Verdict(passed=True, metadata=metadata)


def record(data_root: Path, check_id: str, digest: str, run_id: str, verdict: Verdict) -> None:
    """Remember a pass; a failure removes any earlier pass so it can never be reused."""
    path = ledger_entry(data_root, check_id)
    if not verdict.passed:
        path.unlink(missing_ok=True)
        return
    entry = {
        "check": check_id,
        "digest": digest,
        "run_id": run_id,
        "validated_at": datetime.now(UTC).isoformat(),
        "metadata": _plain(verdict.metadata),
    }
    write_bytes_atomic(path, orjson.dumps(entry, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2))


def _plain(metadata: dict[str, Any]) -> dict[str, Any]:
    return {
        k: v if isinstance(v, bool | int | float | str) or v is None else str(v)
        for k, v in metadata.items()
    }


def cached_verdict(
    data_root: Path, check_id: str, digest: str, run_id: str, judge: Callable[[], Verdict]
) -> Verdict:
    """The ledger's pass for `digest` if there is one (and re-validation is not forced), else
    `judge()`, recorded."""
    if not revalidate_requested():
        reused = recall(data_root, check_id, digest)
        if reused is not None:
            return reused
    verdict = judge()
    record(data_root, check_id, digest, run_id, verdict)
    return verdict
