"""`pipelines/schemas/bronze_dtypes.py`: the bronze Polars schemas parsing types rows with, read
from the Pandera models' source so that a parse worker imports neither Pandera nor pandas (issue
36): exactly the schemas Pandera makes of the models."""

import subprocess
import sys
from pathlib import Path

from pipelines.config.names import SOURCES
from pipelines.schemas import polars_schema
from pipelines.schemas.bronze import bronze_models
from pipelines.schemas.bronze_dtypes import bronze_schemas

PROJECT = Path(__file__).parents[1]


def test_every_bronze_table_has_its_models_exact_schema_in_the_models_order():
    for source in SOURCES:
        models = bronze_models(source)
        assert list(bronze_schemas(source)) == list(models), source
        for table, model in models.items():
            read = bronze_schemas(source)[table]
            assert list(read.items()) == list(polars_schema(model).items()), table


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
