"""The bench's 1 % of new files dated after the corpus, as a night's new logs are.

The copied files come from a demo corpus made with another seed, which starts its conversations on
the same day as the corpus. A copied conversation is then the earliest of any rater component it
joins, and a split group is named after its earliest conversation (transforms/groups.py): every
night would rename, and so move, an old group, which is what backfilled logs do, not new ones.
Only dialogue files are dated again. The decision source's copied sessions (mostly in SQLite files)
keep their dates: the corpus's first decision session (seed 7, 2025-03-03 09:00:11) precedes every
copied one (the first at 09:00:58), so the decision source's giant actor group keeps its name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path

DIALOGUE_FOLDERS = ("dialogues", "feedback")
# A timestamp field of the dialogue source in any of the demo's styles: ISO with `T` or a space
# (with or without a zone), epoch seconds. The demo's absurd ones (year 2207, 17 digits) do not
# match and stay as absurd as they were.
_STAMP = re.compile(
    rb'("(?:created_at|updated_at|ts)"\s*:\s*)'
    rb'(?:"(20\d\d-\d\d-\d\d)([T ])(\d\d:\d\d:\d\d)([^"]*)"|(1\d{9}(?:\.\d+)?)(?![\d.]))'
)


def _when(match: re.Match[bytes]) -> datetime:
    if match[6] is not None:
        return datetime.fromtimestamp(float(match[6]), UTC)
    return datetime.fromisoformat(f"{match[2].decode()}T{match[4].decode()}+00:00")


def stamps(paths: Iterable[Path]) -> list[datetime]:
    return [_when(m) for path in paths for m in _STAMP.finditer(path.read_bytes())]


def dialogue_files(raw: Path) -> list[Path]:
    return sorted(p for top in DIALOGUE_FOLDERS for p in (raw / top).rglob("*") if p.is_file())


def shift_after(corpus_raw: Path, new_raw: Path) -> timedelta:
    """Whole days that put every dialogue time of `new_raw` after every one of `corpus_raw`."""
    corpus, new = stamps(dialogue_files(corpus_raw)), stamps(dialogue_files(new_raw))
    if not corpus or not new:
        return timedelta(0)
    return timedelta(days=(max(corpus) - min(new)).days + 1)


def shift_times(path: Path, by: timedelta) -> None:
    """Rewrite a dialogue file's timestamps `by` later, each in its own style, on its bytes."""

    def later(m: re.Match[bytes]) -> bytes:
        if m[6] is not None:
            seconds = float(m[6]) + by.total_seconds()
            text = str(int(seconds)) if b"." not in m[6] else repr(seconds)
            return m[1] + text.encode()
        moved = (_when(m) + by).strftime(f"%Y-%m-%d{m[3].decode()}%H:%M:%S")
        return m[1] + b'"' + moved.encode() + m[5] + b'"'

    data = path.read_bytes()
    moved = _STAMP.sub(later, data)
    if moved != data:
        path.write_bytes(moved)
