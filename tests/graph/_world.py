"""A module's folder for its builds, with the environment they run in: Dagster's home there and
a fixed pseudonym key (so releases compare by content hash)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


def build_world(tmp_path_factory: pytest.TempPathFactory, name: str, key: str) -> Iterator[Path]:
    """For a module-scoped fixture: `yield from build_world(tmp_path_factory, "…", KEY)`."""
    tmp = tmp_path_factory.mktemp(name)
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("DAGSTER_HOME", str(tmp))
        monkeypatch.setenv("TURNLAKE_PSEUDONYM_KEY", key)
        yield tmp
