"""Where every file lives under the data root (one place, so nothing guesses).

`<data root>/` holds `warehouse/` (`bronze/` and `tables/` = silver/gold/splits: Delta
tables), `warehouse.duckdb`, `exports/` (releases), `reports/` (HTML build reports), `privacy/`
(tombstones), `raw/` (the default raw root), `.turnlake/` (state that is never released:
validation ledger, redaction memo, generated pseudonym key) and `.turnlake.lock`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pipelines.storage.uri import is_remote, local_cache


@dataclass(frozen=True)
class Layout:
    data_root: Path

    @property
    def warehouse(self) -> Path:
        return self.data_root / "warehouse"

    def bronze_dir(self, table: str) -> Path:
        """A bronze table: a Delta table partitioned by part id (pipelines/storage/bronze.py)."""
        return self.warehouse / "bronze" / table

    def parse_quarantine_dir(self, source: str) -> Path:
        """A source's parse quarantine: a Delta table partitioned by part id, like bronze."""
        return self.warehouse / "bronze" / "_quarantine" / source

    def ingest_log(self, source: str) -> Path:
        """A source's ingest log: a Delta table naming, per raw file, the part holding its rows."""
        return self.warehouse / "bronze" / "_ingest" / source

    def legacy_ingest_log(self, source: str) -> Path:
        """The ingest log of the layout before bronze was Delta (one Parquet file): nothing reads
        it any more; its data root is re-parsed once and the file removed."""
        return self.warehouse / "bronze" / "_ingest" / f"{source}.parquet"

    def table_dir(self, layer: str, table: str) -> Path:
        """A silver, gold or splits table: a Delta table (pipelines/storage/tables.py)."""
        return self.warehouse / "tables" / layer / table

    def snapshot_log(self, layer: str) -> Path:
        """One line per published snapshot of a layer; the last one is current."""
        return self.warehouse / "tables" / layer / "_snapshots.jsonl"

    def legacy_generations(self) -> list[Path]:
        """Generation folders and links of the layout before Delta tables (`warehouse/silver`,
        `silver.<run>`, …): nothing reads them any more (never on object storage)."""
        if self.is_remote:
            return []
        return [
            path
            for layer in ("silver", "gold", "splits")
            for path in (self.warehouse / layer, *self.warehouse.glob(f"{layer}.*"))
            if path.is_symlink() or path.exists()
        ]

    @property
    def is_remote(self) -> bool:
        """The data root is on object storage (`s3://…`): no renames, no OS locks."""
        return is_remote(self.data_root)

    @property
    def local(self) -> Path:
        """Where files that must stay local live: the data root itself, or for a remote data
        root a cache folder of its own on this machine (pipelines/storage/uri.py)."""
        return local_cache(self.data_root) if self.is_remote else self.data_root

    @property
    def duckdb(self) -> Path:
        """The DuckDB file (a local file even for a remote data root: DuckDB here cannot write
        to object storage)."""
        return self.local / "warehouse.duckdb"

    @property
    def exports(self) -> Path:
        return self.data_root / "exports"

    def release(self, version: str) -> Path:
        return self.exports / version

    @property
    def reports(self) -> Path:
        """`reports/`: one HTML build report per run, and `latest.html`."""
        return self.data_root / "reports"

    @property
    def raw(self) -> Path:
        """The raw root when none is given."""
        return self.data_root / "raw"

    @property
    def lock_file(self) -> Path:
        return self.data_root / ".turnlake.lock"

    @property
    def dagster_home(self) -> Path:
        """The Dagster instance's folder when run outside the project (no dagster.yaml in cwd)."""
        return self.local / ".dagster"

    @property
    def state(self) -> Path:
        """`.turnlake/`: the engine's own state, never released."""
        return self.data_root / ".turnlake"

    @property
    def last_build(self) -> Path:
        """The record of the last fully successful build (orchestration/build_record.py)."""
        return self.state / "last_build.json"

    def ledger_entry(self, check_id: str) -> Path:
        """The validation ledger's record of one check's last pass."""
        name = check_id.replace("/", "_").replace(":", ".")
        return self.state / "validated" / f"{name}.json"

    @property
    def redaction_memo_dir(self) -> Path:
        return self.state / "redaction-memo"

    def redaction_memo(self, fingerprint: str) -> Path:
        return self.redaction_memo_dir / f"{fingerprint}.parquet"

    @property
    def generated_pseudonym_key(self) -> Path:
        return self.state / "pseudonym.key"

    @property
    def tombstones(self) -> Path:
        """`privacy/tombstones.jsonl`: one line per `turnlake forget`."""
        return self.data_root / "privacy" / "tombstones.jsonl"
