"""The release's row order and the survey dataset (assemble.py, partitioned.py)."""

from __future__ import annotations

import polars as pl

from pipelines.exports.datasets.common import sha256_hex
from pipelines.release.row_ids import ROW_ID


def _flat_columns(frame: pl.DataFrame) -> list[str]:
    return [c for c, t in frame.schema.items() if not isinstance(t, (pl.List, pl.Struct, pl.Array))]


def canonical_order(frame: pl.DataFrame) -> pl.DataFrame:
    """Rows sorted by every flat column, so the release's bytes (and version) do not depend on the
    order joins and group-bys happened to produce (the tie-breaker of `shuffled_order`)."""
    flat = _flat_columns(frame)
    return frame.sort(flat, nulls_last=True, maintain_order=True) if flat else frame


def shuffled_order(name: str, frame: pl.DataFrame) -> pl.DataFrame:
    """Rows in a stable pseudo-random order: by sha256 of the row id (ROW_ID), so trainers that
    read in order see every source mixed, and a row keeps its place relative to the others when
    rows are added. Ties (equal ids) keep the order they come in, which `canonical_order` made
    deterministic."""
    columns = [c for c in ROW_ID.get(name, ()) if c in frame.columns] or _flat_columns(frame)
    if not columns or frame.height == 0:
        return frame
    row_id = pl.concat_str(
        [pl.col(c).cast(pl.String).fill_null("") for c in columns], separator="\x1f"
    )
    ids = frame.select(row_id.alias("_id")).unique()
    ids = ids.with_columns(_order=sha256_hex(pl.col("_id")))
    keys = ["_order", "step"] if name == "rl_steps" and "step" in frame.columns else ["_order"]
    ordered = frame.with_columns(_id=row_id).join(ids, on="_id", how="left", maintain_order="left")
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
