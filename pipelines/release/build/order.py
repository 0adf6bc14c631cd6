"""The release's row order and the survey dataset (staged.py, partitioned.py)."""

from __future__ import annotations

import polars as pl

from pipelines.release.build.row_ids import ROW_ID
from pipelines.sources.base import sha256_hex


def flat_columns(schema: pl.Schema) -> list[str]:
    return [c for c, t in schema.items() if not isinstance(t, (pl.List, pl.Struct, pl.Array))]


def row_id(name: str, schema: pl.Schema) -> pl.Expr | None:
    """A row's id as one string (None: the dataset has no column to name its rows by)."""
    columns = [c for c in ROW_ID.get(name, ()) if c in schema] or flat_columns(schema)
    if not columns:
        return None
    return pl.concat_str(
        [pl.col(c).cast(pl.String).fill_null("") for c in columns], separator="\x1f"
    )


def key_read_columns(name: str, schema: pl.Schema) -> list[str]:
    """The columns `split` and `release_key_columns` read, in `schema`'s order (so that a frame
    of these alone names its rows as the whole frame does)."""
    ids = [c for c in ROW_ID.get(name, ()) if c in schema] or flat_columns(schema)
    wanted = {"split", *ids, *release_key_names(name, schema)}
    return [c for c in schema if c in wanted]


def release_key_names(name: str, schema: pl.Schema) -> list[str]:
    """The flat columns that are part of the release order's primary key (the step of
    `rl_steps`: an episode's steps stay in order)."""
    return ["step"] if name == "rl_steps" and "step" in schema else []


def release_key_columns(name: str, frame: pl.DataFrame) -> list[pl.Expr]:
    """The primary key of the release order (`shuffled_order`): sha256 of the row id, and the
    step in `rl_steps`; none when rows have no id (they stay in the order they came in)."""
    ids = row_id(name, frame.schema)
    if ids is None:
        return []
    return [sha256_hex(ids), *map(pl.col, release_key_names(name, frame.schema))]


def canonical_order(frame: pl.DataFrame) -> pl.DataFrame:
    """Rows sorted by every flat column, so the release's bytes (and version) do not depend on the
    order joins and group-bys happened to produce (the tie-breaker of `shuffled_order`)."""
    flat = flat_columns(frame.schema)
    return frame.sort(flat, nulls_last=True, maintain_order=True) if flat else frame


def shuffled_order(name: str, frame: pl.DataFrame) -> pl.DataFrame:
    """Rows in a stable pseudo-random order: by sha256 of the row id (ROW_ID), so trainers that
    read in order see every source mixed, and a row keeps its place relative to the others when
    rows are added. Ties (equal ids) keep the order they come in, which `canonical_order` made
    deterministic."""
    ids_of = row_id(name, frame.schema)
    if ids_of is None or frame.height == 0:
        return frame
    ids = frame.select(ids_of.alias("_id")).unique()
    ids = ids.with_columns(_order=sha256_hex(pl.col("_id")))
    keys = ["_order", *release_key_names(name, frame.schema)]
    ordered = frame.with_columns(_id=ids_of).join(ids, on="_id", how="left", maintain_order="left")
    return ordered.sort(keys, maintain_order=True).drop("_id", "_order")


def survey_dataset(answers: pl.DataFrame, splits: pl.DataFrame) -> pl.DataFrame:
    """Survey answers with the split of their participant's group (study groups are
    participants)."""
    return (
        answers.drop("source_file")
        .join(
            splits.select("group_id", "split"),
            left_on="participant_id",
            right_on="group_id",
            how="inner",
        )
        .with_columns(group_id=pl.col("participant_id"))
    )
