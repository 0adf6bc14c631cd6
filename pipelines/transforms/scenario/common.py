"""Shared by the scenario modules: the source name, episode ids, deterministic ids and JSON
attributes."""

from __future__ import annotations

import polars as pl

from pipelines.sources.base import stable_hash

SOURCE = "scenario"


def json_object(fields: dict[str, pl.Expr], raw: dict[str, pl.Expr] | None = None) -> pl.Expr:
    """A JSON object text from plain columns plus columns that already hold JSON text."""
    encoded = pl.struct(**fields).struct.json_encode()
    if not raw:
        return encoded
    pieces: list[pl.Expr] = [encoded.str.strip_suffix("}")]
    for name, expr in raw.items():
        pieces += [pl.lit(f',"{name}":'), expr.fill_null("null")]
    return pl.concat_str([*pieces, pl.lit("}")])


def hashed(kind: str, *columns: str) -> pl.Expr:
    """Deterministic id: stable_hash of a kind tag and the given columns' values."""
    return pl.struct(columns).map_elements(
        lambda row: stable_hash(kind, *row.values()), return_dtype=pl.String
    )


def episode_id() -> pl.Expr:
    return pl.concat_str([pl.lit(f"{SOURCE}:"), pl.col("scenario_id")])
