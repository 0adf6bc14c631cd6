"""A table's Pandera contract checked a bounded piece at a time, reusing partitions that passed.

Every rule of the contracts is row-local (types, nullability, ranges, patterns) except `unique`
fields, so validating a table in pieces and then checking its unique columns over the whole
table gives exactly the verdict of validating it at once, with the memory of one piece. A table is
read a chunk of partitions at a time, each chunk in slices of at most CHECK_ROWS rows; a table
stored whole is one partition (`WHOLE_PIECE`). A partition whose digest and judging code (the
engine digest) are those it last passed with is not read again: a partition's digest is the one
the engine recorded in `_partition_digests` (what its rows were computed from), a whole table's
the names of its Delta files (written once, never changed), a bronze part file's its stat line
(its name is content-addressed). Those passes are the checks' only memory (one small file per
contract under `<data root>/.turnlake/validated/`; no verdict is ever reused whole: every check
judges on every run), and `TURNLAKE_REVALIDATE=1` ignores them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import pandera.polars as pa
import polars as pl

from pipelines.checks.revalidate import revalidate_requested
from pipelines.checks.verdicts import Markdown, Verdict
from pipelines.partitions.assign import PARTITION
from pipelines.partitions.store import chunks, row_digests
from pipelines.reports.markdown import markdown_table
from pipelines.storage import tables as stored
from pipelines.storage.files import scan_parquet, write_bytes_atomic
from pipelines.storage.fingerprint import fingerprint, stat_part
from pipelines.storage.layout import Layout

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


def passes_path(layout: Layout, check_id: str) -> Path:
    """Where the partitions (or part files) a contract passed are kept."""
    return layout.ledger_entry(check_id).with_suffix(".partitions.json")


def _recall(path: Path, code: str) -> dict[str, str]:
    if revalidate_requested():
        return {}
    try:
        entry = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    ok = isinstance(entry, dict) and entry.get("code") == code
    return dict(entry.get("passed") or {}) if ok else {}


def _failure_cases(frame: pl.DataFrame, model: type[pa.DataFrameModel]) -> pl.DataFrame | None:
    """Pandera's failure cases of `frame` (its PARTITION column aside), each with the partition
    of its row; a failure of no particular row (a wrong type) counts for every partition read.
    `unique` is left to `_duplicates`, over the whole table."""
    try:
        model.validate(frame.drop(PARTITION), lazy=True)
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
    model: type[pa.DataFrameModel], layout: Layout, layer: str, table: str, check_id: str, code: str
) -> Verdict:
    """The contract `model` on the table in force, a piece at a time; partitions that passed
    with the same digest and `code` are answered from their recorded passes."""
    path = passes_path(layout, check_id)
    outcome = _judge_partitions(model, layout, layer, table, _recall(path, code))
    duplicates = _duplicates(model, layout, layer, table)
    verdict = _verdict(stored.rows(layout, layer, table), outcome, duplicates)
    entry = {"code": code, "passed": dict(sorted(outcome.passed.items()))}
    write_bytes_atomic(path, orjson.dumps(entry, option=orjson.OPT_SORT_KEYS))
    return verdict


def _file_groups(keys: dict[str, Path], budget: int) -> Iterator[list[tuple[str, Path]]]:
    """Files (by their stat line, `name|size|mtime`) in groups of about `budget` bytes on disk."""
    group: list[tuple[str, Path]] = []
    size = 0
    for key, path in sorted(keys.items()):
        fields = key.split("|")
        size += int(fields[1]) if len(fields) > 2 and fields[1].isdigit() else budget
        group.append((key, path))
        if size >= budget:
            yield group
            group, size = [], 0
    if group:
        yield group


def validate_files(
    model: type[pa.DataFrameModel],
    layout: Layout,
    files: list[Path],
    schema: pl.Schema,
    check_id: str,
    code: str,
) -> Verdict:
    """The contract `model` on a bronze table's current part files, a group of files at a time
    (each part is bounded by the ingest batch); a part file is immutable (its name is content-
    addressed), so one that passed with the same `code` is not read again. A failure names the
    part files holding the failing rows."""
    path = passes_path(layout, check_id)
    before = _recall(path, code)
    keys = {stat_part(f, layout.data_root): f for f in files}
    outcome = _Outcome(
        passed={k: "ok" for k in keys if k in before}, reused=len(set(keys) & set(before))
    )
    todo = {k: f for k, f in keys.items() if k not in before}
    groups = _file_groups(todo, FILE_BYTES) if files else iter([[]])  # none: columns only
    for group in groups:
        piece = pl.DataFrame(schema={**schema, PARTITION: pl.String})
        if group:  # each row's file, by name (paths are absolute or URIs)
            piece = (
                scan_parquet([f for _, f in group], schema=schema, include_file_paths=PARTITION)
                .with_columns(pl.col(PARTITION).str.split("/").list.last())
                .collect()
            )
        cases = _failure_cases(piece, model)
        failed = set() if cases is None else set(cases.get_column(PARTITION))
        outcome.validated += len(group)
        outcome.passed |= {k: "ok" for k, f in group if f.name not in failed}  # names are unique
        outcome.failures += [] if cases is None else [cases]
    rows = scan_parquet(files, schema=schema).select(pl.len()).collect().item() if files else 0
    verdict = _verdict(rows, outcome, None)
    entry = {"code": code, "passed": dict(sorted(outcome.passed.items()))}
    write_bytes_atomic(path, orjson.dumps(entry, option=orjson.OPT_SORT_KEYS))
    return verdict
