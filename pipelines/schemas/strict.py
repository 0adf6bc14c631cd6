"""The base every table model shares: strict (no undeclared columns), no silent type coercion."""

from __future__ import annotations

import pandera.polars as pa


class StrictModel(pa.DataFrameModel):
    class Config:
        strict = True
        coerce = False
