"""What a release unit's built entry holds besides its datasets: the key frame the global rules
read (duplicate prompts, the split proof) and every distinct string (the subject-id recheck)."""

from __future__ import annotations

import polars as pl

from pipelines.privacy.text_leaves import is_textual, string_leaves
from pipelines.sources.base import sha256_hex

# an entry's frames besides the datasets (TEXTS: every distinct string in them; privatize's
# KNOWN_NAMES too)
KEYS, PARTICIPANTS, TEXTS = "_keys", "_participants", "_texts"
KEY_SCHEMA = pl.Schema(
    {
        "dataset": pl.String,
        "row": pl.UInt32,
        "prompt_hash": pl.String,
        "split": pl.String,
        "group_id": pl.String,
        "episode_id": pl.String,
        "row_hash": pl.String,
    }
)
# What makes two rows of a dataset exact duplicates (the same prompt and answer; the same prompt,
# chosen and rejected): one of them is released (datasets.py `kept_rows`).
ROW_CONTENT = {
    "sft": ("messages",),
    "kto": ("prompt", "completion"),
    "preference": ("prompt", "chosen", "rejected"),
}


def key_frame(datasets: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """One row per dataset row: what the duplicate rules and the split proof read (`row_hash`:
    sha256 of the row's ROW_CONTENT as JSON, null for a dataset without one)."""
    frames = [pl.DataFrame(schema=KEY_SCHEMA)]
    for name, frame in datasets.items():
        present = [c for c in KEY_SCHEMA.names()[2:] if c in frame.columns]
        content = [c for c in ROW_CONTENT.get(name, ()) if c in frame.columns]
        row_hash = sha256_hex(pl.struct(content).struct.json_encode()) if content else pl.lit(None)
        frames.append(
            frame.select(
                dataset=pl.lit(name),
                row=pl.int_range(pl.len(), dtype=pl.UInt32),
                **{c: pl.col(c).cast(pl.String) for c in present},
                row_hash=row_hash.cast(pl.String),
            )
        )
    return pl.concat(frames, how="diagonal").select(KEY_SCHEMA.names()).cast(KEY_SCHEMA)


def distinct_texts(datasets: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """Every distinct string of the datasets, however nested: all a later release reads of this
    entry to tell whether a subject id that came or went occurs in it (parts.py)."""
    leaves = [
        string_leaves(frame, [c for c, t in frame.schema.items() if is_textual(t)])
        for frame in datasets.values()
    ]
    return pl.concat([pl.Series("text", [], dtype=pl.String), *leaves]).unique().to_frame("text")
