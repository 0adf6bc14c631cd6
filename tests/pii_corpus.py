"""The labelled PII corpus under tests/fixtures/pii, shared by the privacy and release tests."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from pipelines.demo import study_text

PII = Path(__file__).parent / "fixtures" / "pii"


def org_names() -> list[str]:
    return [
        line.strip() for line in (PII / "org_names.txt").read_text().splitlines() if line.strip()
    ]


def positive() -> list[dict]:
    """Texts with their expected spans (`text`, `expected`: kind and value of each)."""
    lines = (PII / "positive.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def negative() -> list[str]:
    """Ordinary text that must not be redacted: negative.txt and every demo study text (dispatcher
    lines, resident replies, judge notes, scenarios)."""
    lines = [
        line
        for line in (PII / "negative.txt").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    return lines + [
        v
        for name in dir(study_text)
        if name.isupper()
        for v in strings_in(getattr(study_text, name))
    ]


def strings_in(value) -> Iterator[str]:
    """Every string inside nested dicts, lists and tuples."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from strings_in(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from strings_in(v)
