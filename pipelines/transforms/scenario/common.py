"""Shared by the scenario modules: the source name, episode ids and JSON attributes."""

from __future__ import annotations

import polars as pl

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


def episode_id() -> pl.Expr:
    return pl.concat_str([pl.lit(f"{SOURCE}:"), pl.col("scenario_id")])
