"""`pipelines/schemas/bronze_dtypes.py`, generated from the bronze Pandera models like the data
dictionary.

Parsing types every bronze row with its table's Polars schema. Reading that schema from the model
imported Pandera (and through it pandas: ~2 s of CPU and ~60 MB) into every parse worker and the
forkserver they fork from, only to learn each column's dtype; the generated module holds the same
dtypes as plain Polars. `turnlake dictionary` writes it, and a test fails when it is stale against
the models (which stay the contract the bronze checks validate with).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from pipelines.config.names import SOURCES
from pipelines.schemas import polars_schema
from pipelines.schemas.bronze import bronze_models

BRONZE_DTYPES_PATH = Path(__file__).resolve().parents[1] / "schemas" / "bronze_dtypes.py"

_HEADER = '''"""The Polars schema of every bronze table, by source, in its model's column order:
generated from the Pandera models (pipelines/schemas/bronze/) by `turnlake dictionary`; do not
edit. What parsing types rows with, without importing Pandera (pipelines/reports/bronze_dtypes.py).
A struct dtype is named after the first column that holds it.
"""

from __future__ import annotations

import polars as pl'''


class _Module:
    """The generated source: one constant per struct dtype (named after where it first occurs,
    defined before its use), then one per table."""

    def __init__(self) -> None:
        self.blocks: list[str] = []
        self.structs: dict[pl.Struct, str] = {}
        self.names: set[str] = set()

    def table(self, table: str, schema: pl.Schema) -> str:
        columns = {
            column: self._dtype(dtype, f"{table}_{column}") for column, dtype in schema.items()
        }
        return self._constant(table, "pl.Schema", columns)

    def _dtype(self, dtype: pl.DataType, where: str) -> str:
        if isinstance(dtype, pl.List):
            return f"pl.List({self._dtype(dtype.inner, where)})"
        if isinstance(dtype, pl.Struct):
            if dtype not in self.structs:
                fields = {f.name: self._dtype(f.dtype, f"{where}_{f.name}") for f in dtype.fields}
                self.structs[dtype] = self._constant(where, "pl.Struct", fields)
            return self.structs[dtype]
        if isinstance(dtype, pl.Datetime):
            return f'pl.Datetime("{dtype.time_unit}", {_quoted(dtype.time_zone)})'
        if not repr(dtype).isidentifier():  # a dtype with parameters not rendered above
            raise ValueError(f"no rendering for dtype {dtype!r} ({where}): add one")
        return f"pl.{dtype!r}"

    def _constant(self, where: str, kind: str, items: dict[str, str]) -> str:
        name = where.upper()
        if name in self.names:
            raise ValueError(f"two constants named {name} in the generated module")
        self.names.add(name)
        lines = [f'        "{key}": {value},' for key, value in items.items()]
        self.blocks.append("\n".join([f"{name} = {kind}(", "    {", *lines, "    }", ")"]))
        return name


def _quoted(value: str | None) -> str:
    return "None" if value is None else f'"{value}"'


def render_bronze_dtypes() -> str:
    module = _Module()
    lines = ["BRONZE_SCHEMAS: dict[str, dict[str, pl.Schema]] = {"]
    for source in SOURCES:
        lines.append(f'    "{source}": {{')
        for table, model in bronze_models(source).items():
            lines.append(f'        "{table}": {module.table(table, polars_schema(model))},')
        lines.append("    },")
    lines.append("}")
    return "\n\n".join([_HEADER, *module.blocks, "\n".join(lines)]) + "\n"


def write_bronze_dtypes(path: Path = BRONZE_DTYPES_PATH) -> Path:
    path.write_text(render_bronze_dtypes(), encoding="utf-8")
    return path
