"""`pipelines/schemas/bronze_dtypes.py`: the bronze Polars schemas parsing types rows with,
generated from the Pandera models (stale = a failing test), so that a parse worker imports neither
Pandera nor pandas (issue 36)."""

import subprocess
import sys
from pathlib import Path

from pipelines.config.names import SOURCES
from pipelines.reports.bronze_dtypes import BRONZE_DTYPES_PATH, render_bronze_dtypes
from pipelines.schemas import polars_schema
from pipelines.schemas.bronze import bronze_models
from pipelines.schemas.bronze_dtypes import BRONZE_SCHEMAS

PROJECT = Path(__file__).parents[1]


def test_bronze_dtypes_module_matches_the_models():
    assert BRONZE_DTYPES_PATH == PROJECT / "pipelines" / "schemas" / "bronze_dtypes.py"
    current = BRONZE_DTYPES_PATH.read_text(encoding="utf-8")
    assert current == render_bronze_dtypes(), "run `uv run turnlake dictionary`"


def test_every_bronze_table_has_its_models_exact_schema_in_the_models_order():
    assert list(BRONZE_SCHEMAS) == list(SOURCES)
    for source in SOURCES:
        models = bronze_models(source)
        assert list(BRONZE_SCHEMAS[source]) == list(models), source
        for table, model in models.items():
            assert BRONZE_SCHEMAS[source][table] == polars_schema(model), table


def test_the_parse_code_imports_neither_pandera_nor_pandas():
    """What the parse workers' forkserver preloads, and every adapter."""
    code = (
        "import sys, pipelines.ingest.tasks\n"
        "from pipelines.config.names import SOURCES\n"
        "from pipelines.sources import adapter\n"
        "for source in SOURCES: adapter(source)\n"
        "print(sorted({n.split('.')[0] for n in sys.modules} & {'pandera', 'pandas'}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=PROJECT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"
