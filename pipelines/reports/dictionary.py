"""The data dictionary, generated from the Pandera models so it cannot drift from the contract."""

from __future__ import annotations

from pathlib import Path

import pandera.polars as pa
import polars as pl

from pipelines.config.names import SOURCES
from pipelines.release.card.columns import (
    DATASET_PURPOSE,
    EXPORT_FIELDS,
    EXPORT_PURPOSE,
    MINARI_FIELDS,
    RELEASE_COLUMNS,
    column_description,
)
from pipelines.runtime.text_tables import markdown_table
from pipelines.schemas.bronze import bronze_models
from pipelines.schemas.gold import GOLD_MODELS, WAREHOUSE_MODELS
from pipelines.schemas.silver import SILVER_MODELS

DICTIONARY_PATH = Path("docs/data_dictionary.md")


def _rules(column: pa.Column) -> str:
    parts = []
    if column.unique:
        parts.append("unique")
    for check in column.checks:
        stats = {k: v for k, v in (check.statistics or {}).items() if v is not None}
        parts.append(
            f"{check.name}({', '.join(map(str, stats.values()))})" if stats else check.name
        )
    return "; ".join(parts)


def _table_section(name: str, model: type[pa.DataFrameModel]) -> str:
    schema = model.to_schema()
    doc = (model.__doc__ or "").strip()
    lines = [
        f"### `{name}`",
        "",
        f"{doc}",
        "",
        f"Model: `{model.__module__}.{model.__name__}`",
        "",
    ]
    columns = pl.DataFrame(
        [
            {
                "column": f"`{col_name}`",
                "type": f"`{col.dtype}`",
                "nullable": "yes" if col.nullable else "no",
                "rules": _rules(col),
                "description": col.description or "",
            }
            for col_name, col in schema.columns.items()
        ],
        schema=dict.fromkeys(("column", "type", "nullable", "rules", "description"), pl.String),
    )
    lines.append(markdown_table(columns))
    return "\n".join(lines) + "\n"


def _release_section(dataset: str) -> str:
    columns = pl.DataFrame(
        [
            {"column": f"`{column}`", "description": column_description(dataset, column)}
            for column in RELEASE_COLUMNS[dataset]
        ],
        schema=dict.fromkeys(("column", "description"), pl.String),
    )
    lines = [f"### `{dataset}`", "", DATASET_PURPOSE[dataset], "", markdown_table(columns)]
    return "\n".join(lines) + "\n"


def _export_section(config: str) -> str:
    fields = pl.DataFrame(
        [{"field": f"`{f}`", "description": d} for f, d in EXPORT_FIELDS[config].items()],
        schema=dict.fromkeys(("field", "description"), pl.String),
    )
    return (
        "\n".join([f"### `{config}`", "", EXPORT_PURPOSE[config], "", markdown_table(fields)])
        + "\n"
    )


def render_dictionary() -> str:
    out = [
        "# turnlake data dictionary",
        "",
        (
            "Generated from the Pandera models by `turnlake dictionary`; do not edit by hand "
            "(a test fails when this file is stale)."
        ),
        "",
        "## Silver (canonical tables)",
        "",
    ]
    out += [_table_section(name, model) for name, model in SILVER_MODELS.items()]
    out += [
        "## Gold (rewards with provenance, outcomes, quality signals; rules in docs/rewards.md)",
        "",
    ]
    out += [_table_section(name, model) for name, model in GOLD_MODELS.items()]
    out += ["## Warehouse (computed from the layers when the views are written)", ""]
    out += [_table_section(name, model) for name, model in WAREHOUSE_MODELS.items()]
    out += [
        (
            "## Release datasets (`data/exports/<version>/<dataset>/`; the same descriptions are "
            "on every release's dataset card, types in its `dataset_info`)"
        ),
        "",
    ]
    out += [_release_section(name) for name in RELEASE_COLUMNS]
    out += [
        (
            "## OpenAI fine-tuning files (`data/exports/<version>/<config>/<split>.jsonl`, one "
            "JSON object a line; a field is named by its path)"
        ),
        "",
    ]
    out += [_export_section(name) for name in EXPORT_FIELDS]
    minari = pl.DataFrame(
        [{"field": f"`{f}`", "description": d} for f, d in MINARI_FIELDS.items()],
        schema=dict.fromkeys(("field", "description"), pl.String),
    )
    out += [
        (
            "## Minari datasets (`turnlake export minari`: `data/minari/<version>/turnlake/<view>/"
            "<split>-v0`; with `[release] minari = true` also `data/exports/<version>/minari/…`; "
            "one episode's fields as `minari.load_dataset(id).iterate_episodes()` gives them)"
        ),
        "",
        markdown_table(minari) + "\n",
    ]
    out += ["## Bronze (one typed table per raw record kind, one Parquet part per raw file)", ""]
    for source in SOURCES:
        out += [_table_section(name, model) for name, model in bronze_models(source).items()]
    return "\n".join(out)


def write_dictionary(path: Path = DICTIONARY_PATH) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_dictionary(), encoding="utf-8")
    return path
