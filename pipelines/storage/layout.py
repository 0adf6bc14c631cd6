"""Where every file lives under the data root (one place, so nothing guesses).

`<data root>/` holds `warehouse/` (`bronze/` and `tables/` = silver/gold/splits: Delta
tables), `warehouse.duckdb`, `exports/` (releases), `minari/` (releases' Minari datasets, as
`turnlake export minari` writes them), `reports/` (HTML build reports), `privacy/`
(tombstones), `raw/` (the default raw root), `.turnlake/` (state that is never released:
build record, caches, generated pseudonym key) and `.turnlake.lock`. Which of
these hold subject data, and what `forget` does to each: storage/subject_data.py, which must
classify every path named here (tests/unit/test_subject_data.py).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from pipelines.storage.uri import is_remote, local_cache

# names under an exports folder (a data root's, or a release store's: release/store/files.py)
LATEST = "LATEST"


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

    @property
    def silver_units(self) -> Path:
        """Where an earlier version cached silver rows per chunk, before opt-outs were withheld;
        nothing reads it now (silver is made per partition from bronze), `forget` deletes it."""
        return self.warehouse / "tables" / "silver_units"

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
    def latest(self) -> Path:
        """`exports/LATEST`: the version of the latest release (release/store/files.py)."""
        return self.exports / LATEST

    def minari_export(self, version: str) -> Path:
        """A release's Minari datasets written by `turnlake export minari` (release/store/
        minari_files.py) when no `--to` is given: outside the release, which stays as published;
        a local folder, as Minari reads local files only."""
        return self.local / "minari" / version

    def downloaded_release(self, version: str) -> Path:
        """A release of a remote data root downloaded for readers that need local files
        (api/release_cache.py): a local folder of its own per exports URI."""
        return local_cache(self.exports) / "releases" / version

    @property
    def lock_file(self) -> Path:
        return self.data_root / ".turnlake.lock"

    @property
    def lease_file(self) -> Path:
        """The token of the run holding the lock (storage/lock.py)."""
        return self.data_root / ".turnlake.lease"

    @property
    def steps_lock_file(self) -> Path:
        """The lock a leased run's steps take in turn (storage/lock.py)."""
        return self.data_root / ".turnlake.steps.lock"

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

    @property
    def legacy_passes(self) -> Path:
        """The contracts' passes kept by older versions, one file per contract (`forget`
        deletes them; the passes now live in the layers' records: checks/partitioned.py)."""
        return self.state / "validated"

    @property
    def report_cache(self) -> Path:
        """SVGs and a page kept by older versions' report cache (`forget` deletes them)."""
        return self.state / "report"

    @property
    def local_state(self) -> Path:
        """State that must stay on this machine: `.turnlake/`, or for a remote data root the
        same folder in its local cache (`local`)."""
        return self.local / ".turnlake"

    @property
    def release_parts(self) -> Path:
        """The content-addressed store of per-partition release work (release/store/part_cache)."""
        return self.local_state / "release-parts"

    @property
    def release_stage(self) -> Path:
        """A release's files before they are published (release/partitioned.py)."""
        return self.local_state / "release-stage"

    @property
    def legacy_trainability_memo(self) -> Path:
        """Problems of release files kept by older versions' trainability memo (`forget`
        deletes it)."""
        return self.local_state / "trainability"

    @property
    def partition_plan(self) -> Path:
        """The plan of silver partition runs, committed once by the planner for the runs to read
        (transforms/partition_plan.py)."""
        return self.state / "partition-plan.parquet"

    @property
    def forgetting(self) -> Path:
        """Present while `turnlake forget` erases: partition runs start no commit meanwhile
        (privacy/forget.py)."""
        return self.state / "forgetting"

    @property
    def generated_pseudonym_key(self) -> Path:
        return self.state / "pseudonym.key"

    @property
    def tombstones(self) -> Path:
        """`privacy/tombstones.jsonl`: one line per `turnlake forget`."""
        return self.data_root / "privacy" / "tombstones.jsonl"

    @staticmethod
    def legacy_listing_cache(raw_root: str | os.PathLike[str]) -> Path:
        """The listing of a local raw root kept by older versions in the local cache folder
        (`forget` deletes it; the listing now lives in the build record: sources/raw_state.py).
        An S3 raw root never had one: its path here is one that does not exist."""
        root = raw_root if is_remote(raw_root) else os.path.abspath(raw_root)
        return local_cache(root) / "listing"
