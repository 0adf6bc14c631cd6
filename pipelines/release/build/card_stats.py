"""What the dataset card says about a config's rows, as aggregates that merge: a release of
partitioned tables computes them one landing batch at a time (staged.py) and sums them, so no step
holds a whole dataset; a whole frame gives the same figures through `FrameStats.of`."""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl
import pyarrow as pa


@dataclass
class FrameStats:
    """Rows, estimated bytes, distinct groups and label counts per split, and the schema."""

    schema: pl.Schema
    arrow_schema: pa.Schema
    rows: dict[str, int] = field(default_factory=dict)
    bytes: dict[str, int] = field(default_factory=dict)
    groups: dict[str, set] = field(default_factory=dict)  # group_id values (null included)
    labels: dict[str, tuple[int, int]] = field(default_factory=dict)  # (len, trues)
    missing_margin: int = 0  # preference pairs with reward_chosen or reward_rejected null

    @property
    def height(self) -> int:
        return sum(self.rows.values())

    @classmethod
    def of(cls, frame: pl.DataFrame) -> FrameStats:
        """The figures of `frame` (it has a `split` column)."""
        stats = cls(frame.schema, frame.head(0).to_arrow().schema)
        stats.add(frame)
        return stats

    def add_empty(self, split: str) -> None:
        """Count a split that has a file but no rows (staged.py): 0 rows, listed on the card."""
        self.rows.setdefault(split, 0)
        self.bytes.setdefault(split, 0)

    def add(self, frame: pl.DataFrame) -> None:
        """Count `frame`'s rows in (same schema as the others)."""
        splits = frame.get_column("split").unique(maintain_order=True).to_list()
        for split in splits:
            # as the card always measured a split (a file of one split: itself, not a copy)
            part = frame if len(splits) == 1 else frame.filter(pl.col("split") == split)
            self.rows[split] = self.rows.get(split, 0) + part.height
            self.bytes[split] = self.bytes.get(split, 0) + part.estimated_size()
            if "group_id" in part.columns:
                self.groups.setdefault(split, set()).update(part.get_column("group_id").unique())
            if "label" in part.columns:
                labels = part.get_column("label")
                old_len, old_true = self.labels.get(split, (0, 0))
                self.labels[split] = (old_len + labels.len(), old_true + (labels.sum() or 0))
        if {"reward_chosen", "reward_rejected"} <= set(frame.columns):
            self.missing_margin += frame.filter(
                pl.col("reward_chosen").is_null() | pl.col("reward_rejected").is_null()
            ).height


def stats_of(frame: pl.DataFrame | FrameStats) -> FrameStats:
    return frame if isinstance(frame, FrameStats) else FrameStats.of(frame)
