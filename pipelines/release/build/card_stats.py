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
            self.add_counts(split, split_counts(part))
        self.missing_margin += missing_margins(frame)

    def add_counts(self, split: str, counts: SplitCounts) -> None:
        """Count in one split's figures, taken from its rows earlier (`split_counts`)."""
        self.rows[split] = self.rows.get(split, 0) + counts.rows
        self.bytes[split] = self.bytes.get(split, 0) + counts.num_bytes
        if counts.groups is not None:
            self.groups.setdefault(split, set()).update(counts.groups)
        if counts.labels is not None:
            old_len, old_true = self.labels.get(split, (0, 0))
            self.labels[split] = (old_len + counts.labels[0], old_true + counts.labels[1])


@dataclass(frozen=True)
class SplitCounts:
    """What the card counts of one split's rows, without the rows."""

    rows: int
    num_bytes: int  # Polars' estimated size of the rows
    groups: list | None  # distinct group_id values (null included); None: no such column
    labels: tuple[int, int] | None  # (len, trues) of `label`; None: no such column


def split_counts(part: pl.DataFrame) -> SplitCounts:
    """The figures `FrameStats` counts of rows of one split."""
    groups = part.get_column("group_id").unique().to_list() if "group_id" in part.columns else None
    labels = None
    if "label" in part.columns:
        column = part.get_column("label")
        labels = (column.len(), column.sum() or 0)
    return SplitCounts(part.height, part.estimated_size(), groups, labels)


def missing_margins(frame: pl.DataFrame) -> int:
    """Preference pairs of `frame` with reward_chosen or reward_rejected null (0 for a dataset
    without them)."""
    if not {"reward_chosen", "reward_rejected"} <= set(frame.columns):
        return 0
    return frame.filter(
        pl.col("reward_chosen").is_null() | pl.col("reward_rejected").is_null()
    ).height


def stats_of(frame: pl.DataFrame | FrameStats) -> FrameStats:
    return frame if isinstance(frame, FrameStats) else FrameStats.of(frame)
