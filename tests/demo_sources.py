"""The demo's raw files of some of its sources only: for tests whose claim holds in code every
source goes through, so that the other sources' files do not add CPU to each of their builds."""

from __future__ import annotations

import importlib
import random
from collections.abc import Iterable
from pathlib import Path


def write_demo_of(raw_root: Path, sources: Iterable[str], seed: int = 7) -> Path:
    """The files `write_demo(raw_root, scale=1, seed=seed)` writes for `sources` (names of
    pipelines/config/names.py SOURCES), and no other; returns `raw_root`."""
    raw_root.mkdir(parents=True, exist_ok=True)
    for source in sources:
        writer = importlib.import_module(f"pipelines.demo.{source}")
        writer.write(raw_root, random.Random(f"{seed}:{source}"), 1)
    return raw_root
