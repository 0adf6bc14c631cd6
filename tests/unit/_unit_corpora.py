"""Corpora for the unit-locality tests (tests/unit/test_units_*.py): a small demo raw folder of
one source, and hand-made bronze rows."""

from __future__ import annotations

import importlib
import random
import shutil
from pathlib import Path

import polars as pl

from pipelines.schemas import polars_schema
from pipelines.schemas.bronze import bronze_models

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def demo_raw(source: str, root: Path, seed: int, scale: int = 1, with_clean: bool = False) -> Path:
    """The source's demo writer (one seed, one scale) under `root`; `with_clean`: the clean
    fixture copied beside it, for a source whose demo alone has too few components to split into
    five parts (their folders do not collide)."""
    writer = importlib.import_module(f"pipelines.demo.{source}")
    writer.write(root, random.Random(f"{seed}:{source}"), scale)
    if with_clean:
        shutil.copytree(FIXTURES / "clean", root, dirs_exist_ok=True)
    return root


def bronze_rows(source: str, table: str, rows: list[dict]) -> pl.LazyFrame:
    """Bronze rows of `table` with every column the rows leave out null."""
    schema = polars_schema(bronze_models(source)[table])
    return pl.DataFrame([{c: r.get(c) for c in schema} for r in rows], schema=schema).lazy()
