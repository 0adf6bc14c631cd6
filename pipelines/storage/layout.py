"""Where every table of the warehouse lives under the data root (one place, so nothing guesses)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Layout:
    data_root: Path

    @property
    def warehouse(self) -> Path:
        return self.data_root / "warehouse"

    def bronze_dir(self, table: str) -> Path:
        return self.warehouse / "bronze" / table

    def bronze_part(self, table: str, part_id: str) -> Path:
        """Immutable part holding the rows of a batch of raw files (`part_id` hashes its members)."""
        return self.bronze_dir(table) / f"{part_id}.parquet"

    def parse_quarantine_dir(self, source: str) -> Path:
        return self.warehouse / "bronze" / "_quarantine" / source

    def parse_quarantine_part(self, source: str, part_id: str) -> Path:
        return self.parse_quarantine_dir(source) / f"{part_id}.parquet"

    def ingest_log(self, source: str) -> Path:
        return self.warehouse / "bronze" / "_ingest" / f"{source}.parquet"

    @property
    def silver_link(self) -> Path:
        """`warehouse/silver`: a symlink to the current silver generation folder."""
        return self.warehouse / "silver"

    def silver(self, table: str) -> Path:
        return self.silver_link / f"{table}.parquet"

    @property
    def gold_link(self) -> Path:
        """`warehouse/gold`: a symlink to the current gold generation folder."""
        return self.warehouse / "gold"

    def gold(self, table: str) -> Path:
        if table == "splits":  # its own asset, so its own generation (gold_tables replaces gold/)
            return self.splits_link / "splits.parquet"
        return self.gold_link / f"{table}.parquet"

    @property
    def splits_link(self) -> Path:
        """`warehouse/splits`: a symlink to the current splits generation folder."""
        return self.warehouse / "splits"

    @property
    def duckdb(self) -> Path:
        return self.data_root / "warehouse.duckdb"

    @property
    def exports(self) -> Path:
        return self.data_root / "exports"
