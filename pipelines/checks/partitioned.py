"""A table's Pandera contract checked a bounded piece at a time, reusing partitions that passed.

Every rule of the contracts is row-local (types, nullability, ranges, patterns) except `unique`
fields, so validating a table in pieces and then checking its unique columns over the whole
table gives exactly the verdict of validating it at once, with the memory of one piece. A table is
read a chunk of partitions at a time, each chunk in slices of at most CHECK_ROWS rows; a table
stored whole is one partition (`WHOLE_PIECE`).

What a contract passed is kept where the layer keeps the record of what each partition is, never
in a store of the checks' own: a silver or gold partition's pass beside its row digest
(`_partition_passes`, pipelines/partitions/store.py), a bronze part's in the ingest log rows
naming it (pipelines/ingest/log.py). A partition is not read again while its digest (the one the
engine recorded in `_partition_digests`; a whole table's: the names of its Delta files, written
once) and the judging engine are those it passed with, nor a bronze part (its id names its files'
rows and parser) that passed with this engine. The passes are recorded once a step has judged
all its checks (pipelines/checks/passes.py), only for what passed; no verdict is ever reused
whole (every check judges on every run), and a revalidating run ignores every pass
(pipelines/checks/revalidate.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pandera.polars as pa
import polars as pl

from pipelines.checks.at_once import holds_at_once
from pipelines.checks.revalidate import revalidate_requested
from pipelines.checks.verdicts import Markdown, Passes, Verdict
from pipelines.ingest import log as ingest_log
from pipelines.ingest.batches import part_files
from pipelines.partitions.assign import PARTITION
from pipelines.partitions.store import chunks, recorded_passes, row_digests
from pipelines.runtime.text_tables import markdown_table
from pipelines.storage import tables as stored
from pipelines.storage.bronze import part_of
from pipelines.storage.files import scan_parquet
from pipelines.storage.fingerprint import fingerprint
from pipelines.storage.layout import Layout
from pipelines.storage.uri import as_root

CHECK_ROWS = 500_000  # rows validated at once: memory follows this, not the table
FILE_BYTES = 32 * 1024 * 1024  # bronze part files (Parquet bytes) validated at once
WHOLE_PIECE = stored.ONE_PARTITION  # the one partition of a table stored whole
UNIQUENESS = "field_uniqueness"  # Pandera's name of the `unique` rule
_SEED = 0x636865636B  # fixed: only equality of hashes within one pass matters


@dataclass
class _Outcome:
    failures: list[pl.DataFrame] = field(default_factory=list)  # PARTITION + Pandera's columns
    passed: dict[str, str] = field(default_factory=dict)  # partition -> digest it passed with
    validated: int = 0
    reused: int = 0


def _failure_cases(frame: pl.DataFrame, model: type[pa.DataFrameModel]) -> pl.DataFrame | None:
    """Pandera's failure cases of `frame` (its PARTITION column aside), each with the partition
    of its row; a failure of no particular row (a wrong type) counts for every partition read.
    `unique` is left to `_duplicates`, over the whole table."""
    data = frame.drop(PARTITION)
    if holds_at_once(model, data):
        return None
    try:
        model.validate(data, lazy=True)
    except pa.errors.SchemaErrors as err:
        cases = err.failure_cases.with_columns(pl.col("failure_case").cast(pl.String))
        cases = cases.filter(pl.col("check") != UNIQUENESS)  # judged over the whole table
        if cases.is_empty():
            return None
        where = frame.get_column(PARTITION)
        parts = pl.Series(PARTITION, where.unique().sort().to_list(), dtype=pl.String)
        on_row = cases.filter(pl.col("index").is_not_null())
        on_row = on_row.with_columns(where.gather(on_row.get_column("index")).alias(PARTITION))
        anywhere = cases.filter(pl.col("index").is_null()).join(parts.to_frame(), how="cross")
        return pl.concat([on_row, anywhere.select(on_row.columns)])
    return None


def _keyed(
    layout: Layout, layer: str, table: str, partitions: list[str] | None = None
) -> pl.LazyFrame:
    """The table with its PARTITION column (only `partitions`, when given): a table stored whole
    is the one partition WHOLE_PIECE."""
    lazy = stored.scan(layout, layer, table, with_partition=True)
    return lazy if partitions is None else lazy.filter(pl.col(PARTITION).is_in(partitions))


def _pieces(layout: Layout, layer: str, table: str, todo: pl.DataFrame) -> Iterator[pl.DataFrame]:
    """The rows of the partitions in `todo` (PARTITION, rows): a chunk of partitions at a time, a
    chunk bigger than CHECK_ROWS (one big partition) in slices of CHECK_ROWS rows."""
    for keys in chunks(todo, CHECK_ROWS):
        rows = todo.filter(pl.col(PARTITION).is_in(keys)).get_column("rows").sum()
        for offset in range(0, rows, CHECK_ROWS):
            yield _keyed(layout, layer, table, keys).slice(offset, CHECK_ROWS).collect()


def _empty(layout: Layout, layer: str, table: str) -> Iterator[pl.DataFrame]:
    """A table without rows: its (typed) empty frame, so its columns are checked."""
    yield _keyed(layout, layer, table).head(0).collect()


def _digests(layout: Layout, layer: str, table: str) -> pl.DataFrame:
    """(PARTITION, digest, rows) of every partition holding rows of `table`; digest null where
    none is recorded (then it is always validated)."""
    keys = (
        _keyed(layout, layer, table)
        .select(PARTITION)
        .group_by(PARTITION)
        .agg(rows=pl.len().cast(pl.Int64))
        .collect()
    )
    recorded = row_digests(layout, layer)
    if recorded is None:
        recorded = pl.DataFrame(schema={PARTITION: pl.String, "digest": pl.String})
    if WHOLE_PIECE in keys.get_column(PARTITION):  # its files are immutable, their names unique
        names = sorted(f.rsplit("/", 1)[-1] for f in stored.files(layout, layer, table))
        whole = {PARTITION: [WHOLE_PIECE], "digest": [fingerprint(names)]}
        recorded = pl.concat([recorded.select(PARTITION, "digest"), pl.DataFrame(whole)])
    return keys.join(recorded.select(PARTITION, "digest"), on=PARTITION, how="left")


def _judge_partitions(
    model: type[pa.DataFrameModel], layout: Layout, layer: str, table: str, before: dict[str, str]
) -> _Outcome:
    out = _Outcome()
    parts = _digests(layout, layer, table)
    same = pl.col("digest").is_not_null() & (
        pl.col("digest")
        == pl.col(PARTITION).replace_strict(before, default=None, return_dtype=pl.String)
    )
    kept, todo = parts.filter(same), parts.filter(~same.fill_null(False))
    out.reused = kept.height
    out.passed = dict(kept.select(PARTITION, "digest").iter_rows())
    digest_of = dict(todo.select(PARTITION, "digest").iter_rows())
    pieces = _pieces(layout, layer, table, todo) if parts.height else _empty(layout, layer, table)
    read: set[str] = set()
    failed: set[str] = set()  # a partition read in several slices passes only if all of them do
    for piece in pieces:
        cases = _failure_cases(piece, model)
        read |= set(piece.get_column(PARTITION).unique())
        if cases is not None:
            failed |= set(cases.get_column(PARTITION))
            out.failures.append(cases)
    out.validated = len(read)
    out.passed |= {k: digest_of[k] for k in read - failed if digest_of.get(k)}
    return out


def _duplicates(
    model: type[pa.DataFrameModel], layout: Layout, layer: str, table: str
) -> pl.DataFrame | None:
    """Values of `unique` fields held by more than one row anywhere in the table: found by their
    64-bit hashes first (8 bytes a row), then confirmed on the values with those hashes."""
    unique = [name for name, col in model.to_schema().columns.items() if col.unique]
    found = []
    for column in unique:
        hashed = pl.col(column).hash(_SEED)
        clashes = (
            stored.scan(layout, layer, table)
            .select(hashed.alias("h"))
            .filter(pl.col("h").is_duplicated())
            .unique()
            .collect()
            .get_column("h")
        )
        if clashes.is_empty():
            continue
        dupes = (
            _keyed(layout, layer, table)
            .filter(hashed.is_in(clashes.implode()))
            .select(column, PARTITION)
            .filter(pl.col(column).is_duplicated())
            .collect()
        )
        found.append(
            dupes.select(
                PARTITION,
                failure_case=pl.col(column).cast(pl.String),
                column=pl.lit(column),
                check=pl.lit(UNIQUENESS),
            )
        )
    return pl.concat(found) if found else None


def _verdict(total: int, outcome: _Outcome, duplicates: pl.DataFrame | None) -> Verdict:
    metadata: dict = {
        "rows": total,
        "partitions_validated": outcome.validated,
        "partitions_reused": outcome.reused,
    }
    cases = [c.select(PARTITION, "column", "check", "failure_case") for c in outcome.failures]
    if duplicates is not None:
        cases.append(duplicates.select(PARTITION, "column", "check", "failure_case"))
    if not cases:
        return Verdict(True, metadata)
    every = pl.concat(cases)
    summary = (
        every.group_by(PARTITION, "column", "check")
        .agg(pl.len().alias("n"), pl.col("failure_case").first().alias("example"))
        .sort("n", PARTITION, descending=[True, False])
    )
    metadata |= {
        "failures": every.height,
        "failed_partitions": ", ".join(sorted(set(every.get_column(PARTITION))))[:2000],
        "failure_summary": Markdown(markdown_table(summary, max_chars=80)),
    }
    return Verdict(False, metadata)


def validate_table(
    model: type[pa.DataFrameModel], layout: Layout, layer: str, table: str, engine: str
) -> Verdict:
    """The contract `model` on the table in force, a piece at a time; partitions that passed
    with the same digest and `engine` are answered from their recorded passes. The verdict
    carries what passed now, for `remember`."""
    home = stored.home_layer(layer, table)
    before = {} if revalidate_requested() else recorded_passes(layout, home, table, engine)
    outcome = _judge_partitions(model, layout, layer, table, before)
    duplicates = _duplicates(model, layout, layer, table)
    verdict = _verdict(stored.rows(layout, layer, table), outcome, duplicates)
    passes = Passes(home, table, dict(sorted(outcome.passed.items())))
    return Verdict(verdict.passed, verdict.metadata, passes)


def _file_groups(files: list[str], budget: int) -> Iterator[list[str]]:
    """Files in groups of about `budget` bytes (a stat each, an object's a HEAD: only the files
    to judge are asked)."""
    group: list[str] = []
    size = 0
    for path in sorted(files):
        size += _path(path).stat().st_size
        group.append(path)
        if size >= budget:
            yield group
            group, size = [], 0
    if group:
        yield group


def validate_parts(
    model: type[pa.DataFrameModel], layout: Layout, source: str, table: str, engine: str
) -> Verdict:
    """The contract `model` on a bronze table's current parts, a group of files at a time
    (each part is bounded by the ingest batch); a part that passed with the same `engine`
    (ingest log) is not read again. A failure names the part files holding the failing rows."""
    from pipelines.schemas import polars_schema

    schema = polars_schema(model)
    log = ingest_log.read_log(layout, source)
    current = sorted(set(log.filter(pl.col("tables").list.contains(table)).get_column("part_id")))
    files = part_files(layout, source, table, current)
    before = set() if revalidate_requested() else ingest_log.passed_parts(log, table, engine)
    todo = [f for f in files if part_of(f) not in before]
    outcome = _Outcome(reused=len(files) - len(todo))
    failed: set[str] = set()
    groups = _file_groups(todo, FILE_BYTES) if files else iter([[]])  # none: columns only
    for group in groups:
        piece = pl.DataFrame(schema={**schema, PARTITION: pl.String})
        if group:  # each row's file, by name (paths are absolute or URIs)
            piece = (
                scan_parquet([_path(f) for f in group], schema=schema, include_file_paths=PARTITION)
                .with_columns(pl.col(PARTITION).str.split("/").list.last())
                .collect()
            )
        cases = _failure_cases(piece, model)
        named = set() if cases is None else set(cases.get_column(PARTITION))
        failed |= {part_of(f) for f in group if f.rsplit("/", 1)[-1] in named}
        outcome.validated += len(group)
        outcome.failures += [] if cases is None else [cases]
    passed = {part_of(f) for f in files} - failed  # a part lost outside turnlake: not passed
    rows = _rows([_path(f) for f in files], schema)
    verdict = _verdict(rows, outcome, None)
    passes = Passes("bronze", table, dict.fromkeys(sorted(passed), "ok"), source, len(todo))
    return Verdict(verdict.passed, verdict.metadata, passes)


def _path(file: str) -> Path:
    return as_root(file) if "://" in file else Path(file)


def _rows(files: list[Path], schema: pl.Schema) -> int:
    return scan_parquet(files, schema=schema).select(pl.len()).collect().item() if files else 0
