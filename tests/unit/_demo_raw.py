"""A small raw corpus of one source for the unit-locality tests: that source's demo writer (one
seed, one scale), plus the clean fixture copied beside it where the demo alone has too few
components to split into five parts (its folders do not collide with the demo's)."""

from __future__ import annotations

import importlib
import random
import shutil
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def demo_raw(source: str, root: Path, seed: int, scale: int = 1, with_clean: bool = False) -> Path:
    writer = importlib.import_module(f"pipelines.demo.{source}")
    writer.write(root, random.Random(f"{seed}:{source}"), scale)
    if with_clean:
        shutil.copytree(FIXTURES / "clean", root, dirs_exist_ok=True)
    return root
