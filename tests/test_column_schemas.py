"""`assets/column_schemas.json`: generated from the Pandera models (stale = a failing test), so
that loading the asset metadata does not import Pandera (issue 15, start-up)."""

import subprocess
import sys
from pathlib import Path

from pipelines.reports.column_schemas import COLUMN_SCHEMAS_PATH, render_column_schemas

PROJECT = Path(__file__).parents[1]


def test_column_schemas_file_matches_the_models():
    assert COLUMN_SCHEMAS_PATH == PROJECT / "assets" / "column_schemas.json"
    current = COLUMN_SCHEMAS_PATH.read_text(encoding="utf-8")
    assert current == render_column_schemas(), "run `uv run turnlake dictionary`"


def test_asset_metadata_loads_without_importing_pandera_or_pandas():
    code = (
        "import sys, assets.metadata as m\n"
        "m.bronze_column_schema('study')\n"
        "print(sorted({n.split('.')[0] for n in sys.modules} & {'pandera', 'pandas'}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=PROJECT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"
