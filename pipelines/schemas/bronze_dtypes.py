"""The Polars schema of every bronze table, read from its Pandera model's source without importing
Pandera.

Parsing types every bronze row with its table's Polars schema. Importing the models imports Pandera
(and through it pandas: ~2 s of CPU and ~60 MB) into every parse worker and the forkserver they
fork from, only to learn each column's dtype; so the dtypes are read from the model module's
syntax tree instead: its module-level constants (`UTC_TS`, struct dtypes), each model class's
annotated columns in order (a base class's first) and `BRONZE_MODELS`. tests/test_bronze_dtypes.py
checks every table against what Pandera itself makes of the model. A source's schemas are read
when first asked for (1–6 ms of CPU apiece, ~20 ms for all seven; importing the module they were
generated into before took ~1.5 ms): a worker parsing one source reads only its module. The
parser's key covers the module read (`parser_version` names `pipelines.schemas.bronze.<source>`),
so a change of one source's dtypes re-parses that source only.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path
from typing import Any

import polars as pl

MODELS_DIR = Path(__file__).resolve().parent / "bronze"

# How Pandera's Polars backend types a column annotated with a Python type.
_PYTHON_TYPES = {"str": pl.String, "int": pl.Int64, "float": pl.Float64, "bool": pl.Boolean}


@cache
def bronze_schemas(source: str) -> dict[str, pl.Schema]:
    """A source's bronze tables and their exact Polars schemas, in `BRONZE_MODELS` order."""
    path = MODELS_DIR / f"{source}.py"
    names: dict[str, object] = {"pl": pl, **_PYTHON_TYPES}
    classes: dict[str, dict[str, pl.DataType]] = {}
    models: ast.Dict | None = None
    for node in ast.parse(path.read_bytes(), filename=str(path)).body:
        if isinstance(node, ast.Assign) and [type(t) for t in node.targets] == [ast.Name]:
            try:
                names[node.targets[0].id] = _evaluate(node.value, names)
            except NameError:  # not a dtype (it uses Pandera): no annotation can name it
                continue
        elif isinstance(node, ast.AnnAssign) and ast.unparse(node.target) == "BRONZE_MODELS":
            models = node.value
        elif isinstance(node, ast.ClassDef):
            columns = {}
            for base in node.bases:  # a model's own base classes: their columns come first
                columns |= classes.get(ast.unparse(base), {})
            for field in node.body:
                if isinstance(field, ast.AnnAssign):
                    columns[ast.unparse(field.target)] = _evaluate(field.annotation, names)
            classes[node.name] = columns
    if not isinstance(models, ast.Dict):
        raise TypeError(f"{path} has no `BRONZE_MODELS: ... = {{table: Model, ...}}`")
    return {
        ast.literal_eval(table): pl.Schema(classes[ast.unparse(model)])
        for table, model in zip(models.keys, models.values, strict=True)
    }


def _evaluate(expr: ast.expr, names: dict[str, object]) -> Any:
    code = compile(ast.Expression(expr), "<bronze model>", "eval")
    return eval(code, {"__builtins__": {}}, names)  # the project's own source, no input's
