"""The per-source ingest log: which raw file's rows live in which bronze part, and so which parts
are current. It is a Delta table, replaced whole by one commit at the end of an ingest: that
commit is what makes the parts it names current (pipelines/storage/bronze.py).

Each row also carries the contracts its part passed (`passed`: the part id and engine they were
judged with, and the tables whose contract passed), written by the bronze checks after they
judge (pipelines/checks/partitioned.py); a part passes a table's contract when every row naming
it says so, so a new part, a part rewritten under another id, a row copied onto a new part or
another engine is judged again. A missing verdict only means "judge it again"."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import polars as pl
import pyarrow as pa

from pipelines.ingest.batches import QUARANTINE_PART, part_files, part_table
from pipelines.schemas import frame_from_rows
from pipelines.schemas.bronze_dtypes import bronze_schemas
from pipelines.storage import bronze
from pipelines.storage.files import remove_file, scan_parquet
from pipelines.storage.layout import Layout
from pipelines.storage.uri import as_root, storage_options

INGEST_LOG_SCHEMA = pl.Schema(
    {
        "source": pl.String,
        "file": pl.String,
        "fingerprint": pl.String,
        "size_bytes": pl.Int64,
        "mtime_ns": pl.Int64,  # modification time when last read: same size and mtime → not re-read
        "parser_version": pl.String,
        "parse_settings": pl.String,
        # what the file's rows are a function of: fingerprint, parser, settings
        "file_id": pl.String,
        "part_id": pl.String,  # the batch part holding the file's rows
        "tables": pl.List(pl.String),
        "records_read": pl.Int64,
        "n_bronze": pl.Int64,
        "n_quarantine": pl.Int64,
        "n_pending": pl.Int64,
        "n_forgotten": pl.Int64,  # records purged because they mention a forgotten subject
        "pending_locators": pl.List(pl.String),
        "run_id": pl.String,
        "parsed_at": pl.Datetime("us", "UTC"),
        "missing_since": pl.Datetime("us", "UTC"),
        # the contracts the row's part passed (null: not judged yet, judge it)
        "passed": pl.Struct(
            {"part_id": pl.String, "engine": pl.String, "tables": pl.List(pl.String)}
        ),
    }
)
VERDICT = "passed"


@cache
def _arrow_log_schema() -> pa.Schema:
    # made on first use, never at import: converting a frame starts Polars' thread pool, and a
    # process that starts it while importing (the multiprocess executor's forkserver preloads
    # this module) forks step processes whose Polars work then waits forever on a pool that
    # did not come with them
    return pl.DataFrame(schema=INGEST_LOG_SCHEMA).to_arrow().schema


def log_frame(rows: list[dict]) -> pl.DataFrame:
    """Log rows (dicts; keys outside the log's schema are left out) as a frame of exactly its
    schema. Through Arrow's converter, in C: Polars' row constructor walked the ~100 k rows of a
    corpus of tiny files in Python (1.09 → 0.34 s, the same frame); a value of another type
    (never made by the ingest) falls back to Polars, which casts it."""
    try:
        return pl.from_arrow(pa.Table.from_pylist(rows, schema=_arrow_log_schema()))
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return frame_from_rows(rows, INGEST_LOG_SCHEMA)


def _log_table(layout: Layout, source: str) -> str:
    return str(layout.ingest_log(source))


def read_log(layout: Layout, source: str) -> pl.DataFrame:
    """The source's ingest log; a log of another schema counts as empty: the source is parsed
    again in full."""
    options = storage_options(layout.data_root)
    log = bronze.read_table(_log_table(layout, source), INGEST_LOG_SCHEMA, options)
    return log if log.schema == INGEST_LOG_SCHEMA else pl.DataFrame(schema=INGEST_LOG_SCHEMA)


def passed_parts(log: pl.DataFrame, table: str, engine: str) -> set[str]:
    """The parts of `table` that passed its contract judged by `engine`: every log row naming
    the part (and the table) holds that verdict for that very part."""
    verdict = pl.col(VERDICT)
    holds = (
        (verdict.struct.field("part_id") == pl.col("part_id"))
        & (verdict.struct.field("engine") == engine)
        & verdict.struct.field("tables").list.contains(table)
    ).fill_null(False)
    named = log.filter(pl.col("tables").list.contains(table))
    parts = named.group_by("part_id").agg(holds.all().alias("ok")).filter(pl.col("ok"))
    return set(parts.get_column("part_id"))


def with_verdicts(log: pl.DataFrame, passed: dict[str, set[str]], engine: str) -> pl.DataFrame:
    """The log with each row's verdict after `engine` judged the tables of `passed` (table →
    the parts that passed its contract): those its part passed, plus the tables judged before
    whose verdict still holds for its part and engine; null where it passed none."""
    pairs = [(part, table) for table, parts in passed.items() for part in parts]
    per_part = (
        pl.DataFrame(pairs, schema={"part_id": pl.String, "_table": pl.String}, orient="row")
        .group_by("part_id")
        .agg(pl.col("_table").alias("_passed"))
    )
    verdict = pl.col(VERDICT)
    still = (verdict.struct.field("part_id") == pl.col("part_id")) & (
        verdict.struct.field("engine") == engine
    )
    judged = pl.lit(pl.Series([sorted(passed)], dtype=pl.List(pl.String)))
    earlier = (
        pl.when(still.fill_null(False))
        .then(verdict.struct.field("tables").list.set_difference(judged))
        .otherwise(pl.lit([], pl.List(pl.String)))
    )
    now = pl.col("_passed").fill_null(pl.lit([], pl.List(pl.String)))
    # sorted through `list.eval`: Polars' `list.sort()` took ~35x as long (98 k rows: 1.39 s)
    tables = earlier.list.set_union(now.list.set_intersection(pl.col("tables")))
    tables = tables.list.eval(pl.element().sort())
    new = pl.struct(part_id=pl.col("part_id"), engine=pl.lit(engine, pl.String), tables=tables)
    return (
        log.join(per_part, on="part_id", how="left", maintain_order="left")
        .with_columns(pl.when(tables.list.len() > 0).then(new).otherwise(None).alias(VERDICT))
        .select(INGEST_LOG_SCHEMA.names())
        .cast(INGEST_LOG_SCHEMA)
    )


def log_exists(layout: Layout, source: str) -> bool:
    return bronze.exists(_log_table(layout, source), storage_options(layout.data_root))


def write_log(layout: Layout, source: str, log: pl.DataFrame) -> None:
    """Commit the new log: from here on, the parts it names are the source's bronze."""
    options = storage_options(layout.data_root)
    bronze.write_table(_log_table(layout, source), log, options)


def _named_parts(log: pl.DataFrame, table: str) -> list[str]:
    named = log.filter(pl.col("tables").list.contains(table)).get_column("part_id")
    return sorted(set(named.to_list()))


def current_parts(
    layout: Layout, source: str, table: str, log: pl.DataFrame | None = None
) -> list[Path]:
    """The files of the parts of one bronze table (or QUARANTINE_PART) that the ingest log names
    as current; `log`: the source's log as `read_log` gives it, when the caller has read it
    already (read here otherwise)."""
    log = read_log(layout, source) if log is None else log
    files = part_files(layout, source, table, _named_parts(log, table))
    return [as_root(f) if "://" in f else Path(f) for f in files]


def scan_current(layout: Layout, source: str, table: str, schema: pl.Schema) -> pl.LazyFrame:
    parts = current_parts(layout, source, table)
    return scan_parquet(parts, schema=schema) if parts else pl.DataFrame(schema=schema).lazy()


def collect_bronze_garbage(layout: Layout, source: str) -> None:
    """Delete the parts the ingest log no longer names (replaced, or written by a build killed
    before its log commit) and vacuum every bronze Delta table of the source, its log's old
    versions included; remove the files of the layout before bronze was Delta.

    Run only after the DuckDB views were rebuilt: until then the old views may still read them.
    """
    options = storage_options(layout.data_root)
    log = read_log(layout, source)
    for table in [*bronze_schemas(source), QUARANTINE_PART]:
        uri = part_table(layout, source, table)
        bronze.drop_parts_except(uri, _named_parts(log, table), options)
    bronze.vacuum_table(_log_table(layout, source), options)
    _remove_legacy_parts(layout, source)


def _remove_legacy_parts(layout: Layout, source: str) -> None:
    """Parquet parts (and temp files of killed writes) that lay directly in a bronze folder, and
    the Parquet ingest log: the layout before bronze was Delta keeps no file there."""
    folders = [layout.bronze_dir(t) for t in bronze_schemas(source)]
    for folder in [*folders, layout.parse_quarantine_dir(source)]:
        if folder.is_dir():
            for path in folder.iterdir():
                if path.suffix in (".parquet", ".tmp") and not path.is_dir():
                    remove_file(path)
    remove_file(layout.legacy_ingest_log(source))
