"""Realistic demo raw data for every source, with the real-world variations and bad records."""

from __future__ import annotations

import importlib
import random
from pathlib import Path

from pipelines.config.names import SOURCES


def write_demo(raw_root: Path, scale: int = 1, seed: int = 7) -> None:
    """Write demo raw files of every source under `raw_root` (deterministic per seed)."""
    raw_root.mkdir(parents=True, exist_ok=True)
    for source in SOURCES:
        writer = importlib.import_module(f"pipelines.demo.{source}")
        writer.write(raw_root, random.Random(f"{seed}:{source}"), scale)


def is_empty(raw_root: Path) -> bool:
    return not raw_root.exists() or not any(p.is_file() for p in raw_root.rglob("*"))
