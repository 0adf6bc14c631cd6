"""Bronze contract of the `oasst` source: one row per OpenAssistant message tree (one raw line)."""

from __future__ import annotations

import pandera.polars as pa
import polars as pl

from pipelines.schemas.strict import StrictModel

UTC_TS = pl.Datetime("us", "UTC")
EMOJI = pl.Struct({"name": pl.String, "count": pl.Int64})
LABEL = pl.Struct({"name": pl.String, "value": pl.Float64, "count": pl.Int64})
MESSAGE = pl.Struct(
    {
        "message_id": pl.String,
        "parent_id": pl.String,
        "role": pl.String,
        "text": pl.String,
        "lang": pl.String,
        "rank": pl.Int64,
        "review_count": pl.Int64,
        "review_result": pl.Boolean,
        "deleted": pl.Boolean,
        "synthetic": pl.Boolean,
        "model_name": pl.String,
        "user_id": pl.String,
        "created_at": UTC_TS,
        "emojis": pl.List(EMOJI),
        "labels": pl.List(LABEL),
        "extra": pl.String,
        "depth": pl.Int64,
        "deleted_above": pl.Boolean,
        "unreviewed_above": pl.Boolean,
        "synthetic_above": pl.Boolean,
    }
)


class OasstTrees(StrictModel):
    file: str = pa.Field(
        description="Raw file, relative to the raw root (`oasst/<dataset>/...jsonl`)."
    )
    locator: str = pa.Field(description="Where the record starts: `line N (byte B)`.")
    line: pl.Int64 = pa.Field(
        ge=1, description="1-based line of the tree; orders records in a file."
    )
    dataset: str = pa.Field(
        description="First folder under `oasst/` (`default` for files directly under it)."
    )
    message_tree_id: str = pa.Field(description="The tree's own id (the prompt's message id).")
    tree_state: str = pa.Field(
        nullable=True, description="OASST's state of the tree (e.g. `ready_for_export`)."
    )
    messages: pl.List(MESSAGE) = pa.Field(
        description=(
            "Every node in depth-first pre-order: ids, the parent's id (null for the prompt), "
            "depth, role (prompter/assistant), text, sibling rank (0 = best), review and "
            "deleted/synthetic flags, emojis {name, count}, labels {name, value, count}, "
            "whether an ancestor is deleted/unreviewed/synthetic, unmapped fields as JSON."
        )
    )
    record_hash: str = pa.Field(
        description="Hash of the dataset and the whole parsed tree: equal hashes = identical "
        "copies."
    )
    extra: str = pa.Field(
        nullable=True, description="Unmapped tree-level fields as a JSON object (never dropped)."
    )


BRONZE_MODELS: dict[str, type[pa.DataFrameModel]] = {"oasst_trees": OasstTrees}
