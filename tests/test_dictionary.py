from pathlib import Path

from pipelines.reports.dictionary import render_dictionary
from pipelines.schemas.silver import SILVER_MODELS


def test_data_dictionary_file_matches_the_models():
    path = Path(__file__).parents[1] / "docs" / "data_dictionary.md"
    assert path.read_text(encoding="utf-8") == render_dictionary(), "run `turnlake dictionary`"


def test_every_contract_column_has_a_description():
    for name, model in SILVER_MODELS.items():
        for column, spec in model.to_schema().columns.items():
            assert spec.description, f"{name}.{column} has no description"
