"""Silver made partition by partition, straight from bronze: the one path (a corpus that fits one
partition is one partition, never a second way).

1. Plan (plan.py): every source's units placed in partitions of whole components and whole split
   groups, each partition's input digest; the stale partitions are those whose digest is not the
   one silver's record holds at its newest version (every one when there is no record to plan
   from, or the opt-out registry names anyone).
2. The stale partitions marked pending in the record, then transformed a group at a time (at
   most BRONZE_ROWS bronze rows, so memory follows a group, not the corpus): each partition's
   units' bronze is transformed source by source (with the evidence rows they read), turns
   counted, opted-out subjects' rows withheld, sorted; the partitions whose rows changed are
   rewritten. Its rows of the tables stored whole (contexts, quarantine, survey answers) are kept,
   before withholding, as its partition of `_piece_<table>`. Then the group's record
   (`_partition_digests`: each partition's row digest, what gold reads, and input digest, what
   the next plan compares). A Dagster partition run does this for one partition
   (partition_run.py).
3. The tables stored whole made again from every partition's pieces (withheld, content-addressed
   contexts kept once, the parse quarantine added), then one publish of the newest versions
   (partition runs' commits included) with the partition map.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import polars as pl

from pipelines.config.names import SOURCES
from pipelines.config.settings import Settings
from pipelines.partitions import store
from pipelines.partitions.assign import PARTITION
from pipelines.partitions.rows import DIGESTS_SCHEMA, SILVER_KEYS, changed, digests
from pipelines.partitions.store import DIGESTS_TABLE, INPUTS, MAP_TABLE, chunks, silver_record
from pipelines.privacy.optouts import empty_optouts, load_optouts, withhold
from pipelines.privacy.subjects import Footprint, rows_mask, subject_footprint
from pipelines.runtime.faults import crash_point
from pipelines.schemas import silver_schema
from pipelines.schemas.silver import SILVER_MODELS
from pipelines.sources.base import dumps
from pipelines.splits.near_dups import NEAR_DUPS_TABLE, SIGNATURES_TABLE
from pipelines.storage import delta_cache
from pipelines.storage import tables as stored
from pipelines.storage.delta_writes import (
    commit_partitions,
    file_paths,
    overwrite_whole,
    scan_files,
)
from pipelines.storage.layout import Layout
from pipelines.storage.uri import storage_options
from pipelines.transforms.build import (
    SORT_KEYS,
    WITHHELD,
    parse_quarantine,
    stamp_with_ingest_run,
    with_turn_counts,
)
from pipelines.transforms.plan import PIECES, Plan, SourceUnits, piece_table, plan_silver
from pipelines.transforms.raw_inputs import RAW_INPUTS, current_raw_inputs
from pipelines.transforms.timing import SilverTimes
from pipelines.transforms.units import UNIT, transform

# bronze rows transformed and committed at once; a bronze row can give many silver rows (a scenario
# entry: turns, feedback, a decision, a context): at 250 k, scenario's 1 GB share went as one group
BRONZE_ROWS = 50_000
SOURCE_COLUMN = "_source"  # a quarantine piece's source: its ingest runs are that source's
_ROW = "_row"  # a row's place in a table stored whole before it is sorted
FOOTPRINT_TABLES = ("episodes", "turns", "decisions", "feedback", "agent_rounds", "contexts")


@dataclass
class Withheld:
    """What the opt-out registry withholds, gathered over every partition (all are transformed
    when it names anyone): rows per table, and what the tables stored whole need of the
    footprint."""

    rows: dict[str, int] = field(default_factory=lambda: {t: 0 for t in SILVER_MODELS})
    used_gone: set[str] = field(default_factory=set)  # contexts a withheld decision uses
    used_kept: set[str] = field(default_factory=set)  # contexts a kept decision uses
    text_ids: set[str] = field(default_factory=set)
    participants: set[str] = field(default_factory=set)

    def footprint(self) -> Footprint:
        return Footprint(
            contexts=self.used_gone - self.used_kept,
            text_ids=self.text_ids,
            participants=self.participants,
        )


def _evidence_of(
    ev: Mapping[str, pl.DataFrame], wanted: Mapping[str, pl.DataFrame]
) -> dict[str, pl.LazyFrame]:
    """The evidence rows a partition's units read (`wanted`: per table read by key, the keys they
    read, from `_evidence_keys`)."""
    out = {}
    for name, table in ev.items():
        keys = wanted.get(name)
        if keys is None:
            out[name] = table.lazy()
            continue
        out[name] = table.join(keys, on=keys.columns, how="semi", nulls_equal=True).lazy()
    return out


def _evidence_keys(
    read_keys: Mapping[str, pl.DataFrame], placed: pl.DataFrame, group: list[str]
) -> dict[str, dict[str, pl.DataFrame]]:
    """partition → evidence table read by key → the distinct keys its units read (`placed`:
    `_unit` and PARTITION of a source's units in the group), cut once per group: filtered for
    each partition, the whole table of keys was scanned once per partition."""
    out: dict[str, dict[str, pl.DataFrame]] = {p: {} for p in group}
    for name, keys in read_keys.items():
        columns = [c for c in keys.columns if c != UNIT]
        joined = keys.join(placed, on=UNIT, how="inner")
        cut = joined.partition_by(PARTITION, as_dict=True, include_key=False)
        for partition, by_table in out.items():
            found = cut.get((partition,))
            mine = found.select(columns) if found is not None else keys.clear().select(columns)
            by_table[name] = mine.unique()
    return out


def _scanned(units: SourceUnits, table: str, wanted: pl.DataFrame) -> pl.LazyFrame:
    """The table's rows of the `wanted` units (`_unit`, PARTITION), in bronze order, PARTITION
    attached. The scan keeps only the files holding them and, when the source names the table's
    scan key, the rows whose key is one of theirs: a filter on stored columns, which Polars runs
    inside the Parquet scan (row groups skipped by statistics, the other columns decoded for the
    kept rows only), where the computed `_unit` could only be joined once every row was read. The
    key may be shared with other units' rows (a conversation id in two datasets): the join on
    `_unit` keeps exactly the wanted units' rows."""
    files = units.unit_files.join(wanted, left_on="unit", right_on=UNIT, how="semi")
    keep = pl.col("file").is_in(files.get_column("file").unique().implode())
    values = units.scan_values.get(table)
    if values is not None:
        key = next(c for c in values.columns if c != "unit")
        theirs = values.join(wanted, left_on="unit", right_on=UNIT, how="semi").get_column(key)
        keep &= pl.col(key).is_in(theirs.unique().implode(), nulls_equal=True)
    return units.tagged[table].filter(keep).join(wanted.lazy(), on=UNIT, maintain_order="left")


def _group_rows(plan: Plan, group: list[str]) -> dict[str, dict[str, dict[str, pl.DataFrame]]]:
    """partition → source → table → the bronze rows of the partition's units, in bronze order.

    A source is read only when the group holds some of its units, and then once: its tables are
    collected together, so a scan they share (decision's records, which tag every table's rows
    with their session) runs once per group, not once per table; only the group's rows are read
    (`_scanned`). Each partition's rows are cut from the group's once (`partition_by`), not
    filtered again for every partition."""
    mine = plan.units.filter(pl.col(PARTITION).is_in(pl.Series(group, dtype=pl.String).implode()))
    out: dict[str, dict[str, dict[str, pl.DataFrame]]] = {p: {} for p in group}
    for source, units in plan.sources.items():
        wanted = mine.filter(pl.col("source") == source).select(
            pl.col("unit").alias(UNIT), PARTITION
        )
        if wanted.is_empty():
            continue
        names = list(units.tagged)
        frames = pl.collect_all(
            [_scanned(units, t, wanted) for t in names],
            engine="streaming",
        )
        for table in names:
            frame = frames.pop(0)  # the group's rows are let go as they are cut
            cut = frame.partition_by(
                PARTITION, as_dict=True, include_key=False, maintain_order=True
            )
            for partition, by_source in out.items():
                rows = cut.get((partition,))
                if rows is None:
                    rows = frame.clear().drop(PARTITION)
                by_source.setdefault(source, {})[table] = rows.drop(UNIT)
    return out


def _empty(table: str) -> pl.DataFrame:
    return pl.DataFrame(schema=silver_schema(table))


def transform_partition(
    plan: Plan,
    settings: Settings,
    rows: Mapping[str, Mapping[str, pl.DataFrame]],
    reads: Mapping[str, Mapping[str, pl.DataFrame]],
    times: SilverTimes | None,
) -> dict[str, pl.DataFrame]:
    """Every source's silver of the partition's units (`rows`: source → table → their bronze
    rows, before withholding; `reads`: source → the evidence keys they read, `_evidence_keys`);
    quarantine rows carry their source (SOURCE_COLUMN)."""
    produced: dict[str, list[pl.DataFrame]] = {}
    for source, part in rows.items():
        if not any(f.height for f in part.values()):
            continue
        su = plan.sources[source]
        started = time.perf_counter()
        bronze = {t: f.lazy() for t, f in part.items()}
        evidence = _evidence_of(su.evidence, reads.get(source, {}))
        silver = transform(source, bronze, settings, evidence)
        if times is not None:
            times.add(source, time.perf_counter() - started, sum(f.height for f in silver.values()))
        for table, frame in silver.items():
            if table == "quarantine":
                frame = frame.with_columns(pl.lit(source).alias(SOURCE_COLUMN))
            produced.setdefault(table, []).append(frame)
    return {table: pl.concat(frames) for table, frames in produced.items()}


def _withhold(
    produced: dict[str, pl.DataFrame], optouts: pl.DataFrame, withheld: Withheld
) -> dict[str, pl.DataFrame]:
    """The partitioned tables without the opted-out subjects' rows: every key of their
    footprint lives in this partition (a group, its episodes and what hangs off them are whole
    here); what the tables stored whole need of it is gathered into `withheld`."""
    tables = {t: produced.get(t, _empty(t)) for t in SILVER_KEYS}
    tables["episodes"] = with_turn_counts(tables["episodes"], tables["turns"])
    if optouts.is_empty():
        return tables
    found = {t: produced.get(t, _empty(t)) for t in FOOTPRINT_TABLES}
    fp = subject_footprint(found, optouts.select("subject_kind", "subject_id"))
    used = found["decisions"].filter(pl.col("context_hash").is_not_null())
    gone = pl.col("decision_id").is_in(pl.Series(sorted(fp.decisions), dtype=pl.String).implode())
    withheld.used_gone |= set(used.filter(gone).get_column("context_hash").to_list())
    withheld.used_kept |= set(used.filter(~gone).get_column("context_hash").to_list())
    withheld.text_ids |= fp.text_ids
    withheld.participants |= fp.participants
    tables, counts = withhold(tables, empty_optouts(), fp)
    for table, n in counts.items():
        withheld.rows[table] += n
    return tables


def _tagged(frame: pl.DataFrame, partition: str) -> pl.DataFrame:
    return frame.with_columns(pl.lit(partition, pl.String).alias(PARTITION))


def _commit(
    layout: Layout,
    tables: Mapping[str, pl.DataFrame],
    group: list[str],
    previous: pl.DataFrame | None,
    first: bool,
) -> tuple[dict[str, int], pl.DataFrame]:
    """Commit the group's partitions whose rows changed (all of them, the first group rewriting
    the tables whole, when `previous` is None) and its pieces; versions, the group's digests."""
    partitioned = {t: tables[t] for t in SILVER_KEYS}
    current = digests(partitioned)
    if previous is None:
        redo = sorted(current.get_column(PARTITION).to_list())
        replace: list[str] | None = None if first else redo
    else:
        mine = previous.filter(pl.col(PARTITION).is_in(pl.Series(group, dtype=pl.String).implode()))
        redo = replace = changed(current, mine)
    options = storage_options(layout.data_root)
    versions = {}
    if replace != []:
        keep = pl.col(PARTITION).is_in(pl.Series(redo, dtype=pl.String).implode())
        for table, frame in partitioned.items():
            versions[table] = stored.commit_partitions(
                stored.table_uri(layout, "silver", table),
                frame if replace is None else frame.filter(keep),
                replace,
                options,
            )
    for table in PIECES:
        uri = stored.table_uri(layout, "silver", piece_table(table))
        whole = previous is None and first
        versions[piece_table(table)] = commit_partitions(
            uri, tables[piece_table(table)], None if whole else group, options
        )
    return versions, current


def _pieces(layout: Layout, table: str, version: int) -> pl.LazyFrame:
    """Every partition's rows of a table stored whole, at the version to be published."""
    uri = stored.table_uri(layout, "silver", piece_table(table))
    options = storage_options(layout.data_root)
    paths = file_paths(delta_cache.pinned(uri, version, options))
    if not paths:
        return _empty(table).lazy().with_columns(pl.lit(None, pl.String).alias(SOURCE_COLUMN))
    return pl.scan_parquet(paths, storage_options=options)


def _sorted_whole(frame: pl.DataFrame, table: str) -> pl.DataFrame:
    """A table stored whole, sorted by its keys (ties in their order in `frame`); contexts one row
    per hash, the first. The order is found on the key columns alone and the rows gathered once:
    sorting the rows themselves held the input, the sort's buffers and the output together (at 1 GB
    +400 MB for 93 MB of contexts, against +230 MB)."""
    keys = frame.select(SORT_KEYS[table]).with_row_index(_ROW)
    if table == "contexts":  # content-addressed: the same blob from two places is one row
        keys = keys.unique(subset="context_hash", keep="first")
    order = keys.sort(SORT_KEYS[table], nulls_last=True, maintain_order=True).get_column(_ROW)
    return frame[order]


def whole_tables(
    layout: Layout, pieces: Mapping[str, int], withheld: Withheld | None
) -> tuple[dict[str, int], dict[str, int]]:
    """Contexts (one row per hash), quarantine (parse + silver rejections, each named after the
    run that read its record) and survey answers from every partition's pieces, withheld and
    sorted, committed one table at a time; versions, rows withheld per table."""
    versions, counts = {}, {}
    options = storage_options(layout.data_root)
    fp = withheld.footprint() if withheld is not None else None
    for table in PIECES:
        lazy = _pieces(layout, table, pieces[piece_table(table)])
        if table == "quarantine":
            by_source = [
                stamp_with_ingest_run(
                    lazy.filter(pl.col(SOURCE_COLUMN) == source).drop(SOURCE_COLUMN), layout, source
                )
                for source in SOURCES
            ]
            lazy = pl.concat([*by_source, *(parse_quarantine(layout, s) for s in SOURCES)])
        lazy = lazy.select(silver_schema(table).names())
        counts[table] = 0
        if fp is not None:
            mask = rows_mask(table, _empty(table), fp)
            counts[table] = int(lazy.select(mask.sum()).collect().item())
            lazy = lazy.filter(~mask)
        frame = _sorted_whole(lazy.collect(), table)
        versions[table] = overwrite_whole(stored.table_uri(layout, "silver", table), frame, options)
        del frame
    return versions, counts


def _sizes(plan: Plan) -> pl.DataFrame:
    """(partition, bronze rows) of every stale partition (0 for one emptied)."""
    rows = plan.units.group_by(PARTITION).agg(pl.col("rows").sum())
    wanted = pl.DataFrame({PARTITION: plan.stale}, schema={PARTITION: pl.String})
    return wanted.join(rows, on=PARTITION, how="left").with_columns(pl.col("rows").fill_null(0))


def _group_reads(plan: Plan, group: list[str]) -> dict[str, dict[str, dict[str, pl.DataFrame]]]:
    """partition → source → evidence table → the keys the partition's units of the source read."""
    mine = plan.units.filter(pl.col(PARTITION).is_in(pl.Series(group, dtype=pl.String).implode()))
    out: dict[str, dict[str, dict[str, pl.DataFrame]]] = {p: {} for p in group}
    for source, units in plan.sources.items():
        placed = mine.filter(pl.col("source") == source).select(
            pl.col("unit").alias(UNIT), PARTITION
        )
        if not units.read_keys or placed.is_empty():
            continue
        for partition, by_table in _evidence_keys(units.read_keys, placed, group).items():
            out[partition][source] = by_table
    return out


def transform_group(
    plan: Plan,
    settings: Settings,
    group: list[str],
    optouts: pl.DataFrame,
    withheld: Withheld,
    times: SilverTimes | None,
) -> dict[str, pl.DataFrame]:
    """The group's partitions transformed, withheld and sorted, each row tagged with its
    partition: table (pieces under their `_piece_` names) → the group's rows."""
    rows = _group_rows(plan, group)
    reads = _group_reads(plan, group)
    parts: dict[str, list[pl.DataFrame]] = {t: [] for t in [*SILVER_KEYS, *PIECES]}
    for partition in group:
        produced = transform_partition(
            plan, settings, rows.pop(partition), reads.pop(partition), times
        )
        for table, frame in _withhold(produced, optouts, withheld).items():
            parts[table].append(_tagged(frame.sort(SORT_KEYS[table], nulls_last=True), partition))
        for table in PIECES:
            piece = produced.get(table)
            if piece is not None:
                parts[table].append(_tagged(piece, partition))
        del produced
    del rows
    tables = {
        t: pl.concat(f, how="diagonal_relaxed") if f else _tagged(_empty(t), "")
        for t, f in parts.items()
    }
    if not parts["quarantine"]:
        tables["quarantine"] = tables["quarantine"].with_columns(
            pl.lit(None, pl.String).alias(SOURCE_COLUMN)
        )
    if times is not None:
        times.partitions += len(group)
    return {(piece_table(t) if t in PIECES else t): f for t, f in tables.items()}


def commit_group(
    layout: Layout,
    plan: Plan,
    tables: Mapping[str, pl.DataFrame],
    group: list[str],
    previous: pl.DataFrame | None,
    first: bool,
) -> dict[str, int]:
    """Commit the group's rows and pieces, then its partitions' record (their row digests and
    inputs): after the rows, so a process stopped in between leaves them pending (marked so
    before: `mark_pending`); the versions committed."""
    versions, current = _commit(layout, tables, group, previous, first)
    crash_point("silver:before_record")
    mine = plan.digests.filter(pl.col(PARTITION).is_in(pl.Series(group, dtype=pl.String).implode()))
    whole = previous is None and first
    record = silver_record(current, mine)
    versions[DIGESTS_TABLE] = store.commit_silver_record(layout, record, None if whole else group)
    return versions


def mark_pending(layout: Layout, plan: Plan, partitions: list[str]) -> None:
    """Record `partitions` as pending before their rows are rewritten (partitions/store.py): a
    process stopped before their record is committed again leaves them stale. Not needed when
    silver is made whole: its record is then unusable until the first group's is committed."""
    if not plan.whole and partitions:
        store.commit_silver_record(layout, store.pending(partitions), partitions)


def previous_rows(plan: Plan) -> pl.DataFrame | None:
    """The row digests the stale partitions' new rows are compared with (None: made whole)."""
    if plan.whole:
        return None
    return plan.record.filter(pl.col("digest").is_not_null()).select(DIGESTS_SCHEMA.names())


class PartitionRunInFlight(RuntimeError):
    """A partition run committed to silver while the build was publishing it."""


def _newest_versions(layout: Layout) -> dict[str, int]:
    """The newest versions of the partitioned tables, pieces and record, taken so that the record
    describes the rows: the tables first, then the record, which must be the version it was
    before them and hold no pending partition (a partition run in flight); else
    PartitionRunInFlight, and the next build publishes what the run committed."""
    options = storage_options(layout.data_root)

    def newest(table: str) -> int:
        return delta_cache.existing(stored.table_uri(layout, "silver", table), options).version()

    before = newest(DIGESTS_TABLE)
    versions = {t: newest(t) for t in [*SILVER_KEYS, *map(piece_table, PIECES)]}
    versions[DIGESTS_TABLE] = newest(DIGESTS_TABLE)
    uri = stored.table_uri(layout, "silver", DIGESTS_TABLE)
    record = scan_files(delta_cache.pinned(uri, versions[DIGESTS_TABLE], options), options)
    unfinished = record.filter(pl.col(INPUTS).is_null()).collect().get_column(PARTITION)
    if versions[DIGESTS_TABLE] != before or len(unfinished):
        raise PartitionRunInFlight(
            f"silver partition runs are committing ({', '.join(unfinished) or 'the record'}): "
            "build again when they have finished"
        )
    return versions


def assemble_silver(
    settings: Settings, run_id: str, inputs: str, times: SilverTimes | None = None
) -> dict[str, int]:
    """Transform the stale partitions group by group (each source's transform timed into `times`
    when given), make the tables stored whole, then publish silver, with what partition runs
    committed before; rows per table."""
    layout = Layout(settings.data_root)
    plan = plan_silver(settings, times)
    # the ingest logs the plan read (one row per raw file, ~80 MB at 1 GB of raw data) are kept
    # while the data root is held; no group reads them, the tables stored whole read them again
    delta_cache.forget_reads()
    optouts = load_optouts(settings.raw_root)[0]
    withheld = Withheld()
    previous = previous_rows(plan)
    crash_point("silver:before_publish")
    mark_pending(layout, plan, plan.stale)
    for number, group in enumerate(list(chunks(_sizes(plan), BRONZE_ROWS)) or [[]]):
        tables = transform_group(plan, settings, group, optouts, withheld, times)
        commit_group(layout, plan, tables, group, previous, number == 0)
        del tables
        crash_point("silver:between_groups")
    versions = _newest_versions(layout)
    committed, counts = whole_tables(layout, versions, None if optouts.is_empty() else withheld)
    versions.update(committed)
    withheld.rows.update(counts)
    frames = {
        MAP_TABLE: plan.partition_map,
        RAW_INPUTS: current_raw_inputs(layout),
        NEAR_DUPS_TABLE: plan.near_duplicates,
        SIGNATURES_TABLE: plan.signatures,
    }
    meta = {stored.RUN: run_id, stored.INPUTS: inputs, WITHHELD: dumps(withheld.rows)}
    stored.publish(layout, "silver", frames, meta, committed=versions)
    crash_point("silver:after_publish")
    return {table: stored.rows(layout, "silver", table) for table in SILVER_MODELS}
