"""Silver per chunk, cached: a source's transform runs again only on the chunks whose inputs changed
(pipelines/transforms/chunks.py), and the silver of the others is read back from the cache.

The cache is, per source, one Delta table per silver table it produces, partitioned by chunk, plus
the chunk map and digests, under `warehouse/tables/silver_units/`. A build commits the changed
chunks' rows first and the digests last: a crash between leaves digests that no longer match, so
those chunks are transformed again. The cache holds rows before opt-outs are withheld, so
`forget` deletes it whole (storage/subject_data.py); it is rebuilt by the next build.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import polars as pl
import pyarrow as pa

from pipelines.config.settings import Settings
from pipelines.partitions.store import chunks as row_groups
from pipelines.runtime.faults import crash_point
from pipelines.schemas import silver_schema
from pipelines.schemas.silver import SILVER_MODELS
from pipelines.storage import delta_cache
from pipelines.storage.delta_writes import commit_partitions, file_paths, overwrite_whole
from pipelines.storage.fingerprint import fingerprint, json_part
from pipelines.storage.layout import Layout
from pipelines.storage.uri import storage_options
from pipelines.transforms import chunks as ch
from pipelines.transforms.units import UNIT, components, evidence, source_units, transform

# bronze rows transformed and committed at once; a bronze row can give many silver rows (a scenario
# entry: turns, feedback, a decision, a context): at 250 k, scenario's 1 GB chunks went as one group
BRONZE_ROWS = 50_000
MAP, DIGESTS = "_chunk_map", "_chunk_digests"


@dataclass(frozen=True)
class ChunkPlan:
    chunk_map: pl.DataFrame  # unit → chunk
    digests: pl.DataFrame  # chunk → digest, scheme
    redo: list[str]  # chunks to transform
    gone: list[str]  # chunks to delete
    evidence: dict[str, pl.DataFrame]  # the source's unit evidence of the whole bronze
    read_keys: dict[str, pl.DataFrame]  # per evidence table read by key: unit and keys


def _uri(layout: Layout, source: str, name: str) -> str:
    return str(layout.silver_units / f"{source}.{name}")


def _read(layout: Layout, source: str, name: str, schema: pl.Schema) -> pl.DataFrame:
    frame = scan_chunks(layout, source, name)
    return pl.DataFrame(schema=schema) if frame is None else frame.collect().select(schema.names())


def _options(layout: Layout) -> dict[str, str] | None:
    return storage_options(layout.data_root)


def _whole_reads(
    ev: Mapping[str, pl.DataFrame], reads: Mapping[str, pl.LazyFrame]
) -> tuple[dict[str, pl.DataFrame], pl.DataFrame, list[str]]:
    """(each read table's (unit, key columns), unit → read digest, digests of tables read
    whole)."""
    per_table, per_unit, whole = {}, [], []
    for name, table in sorted(ev.items()):
        if name not in reads:
            whole.append(f"{name}:{table.hash_rows(seed=0).sort().to_list()}")
            continue
        wanted = reads[name].collect()
        keys = [c for c in wanted.columns if c != UNIT]
        per_table[name] = wanted
        hashed = table.select(*keys, _h=table.hash_rows(seed=0).cast(pl.String))
        per_unit.append(
            wanted.join(hashed, on=keys, how="left", nulls_equal=True).select(
                unit=pl.col(UNIT), read=pl.lit(f"{name}:") + pl.col("_h").fill_null("-")
            )
        )
    reads_frame = (
        pl.concat(per_unit)
        if per_unit
        else pl.DataFrame(schema={"unit": pl.String, "read": pl.String})
    )
    return per_table, reads_frame, whole


def _evidence_of(
    ev: Mapping[str, pl.DataFrame], read_keys: Mapping[str, pl.DataFrame], units: pl.Series
) -> dict[str, pl.LazyFrame]:
    """The evidence rows `units` read (the rule of units.evidence_read, on precomputed reads)."""
    out = {}
    for name, table in ev.items():
        if name not in read_keys:
            out[name] = table.lazy()
            continue
        wanted = read_keys[name].filter(pl.col(UNIT).is_in(units.implode())).drop(UNIT).unique()
        out[name] = table.join(wanted, on=wanted.columns, how="semi", nulls_equal=True).lazy()
    return out


def _plan(
    source: str,
    tagged: Mapping[str, pl.LazyFrame],
    bronze: Mapping[str, pl.LazyFrame],
    settings: Settings,
    file_ids: pl.DataFrame,
    scheme: str,
    layout: Layout,
) -> ChunkPlan:
    module = source_units(source)
    links = module.unit_links(dict(bronze), settings).collect()
    unit_files = (
        pl.concat([f.select(pl.col(UNIT).alias("unit"), "file") for f in tagged.values()])
        .unique()
        .collect()
    )
    units = pl.concat([unit_files.get_column("unit"), links.get_column("unit")])
    chunk_map = ch.assign_chunks(
        components(units.unique(), links), _read(layout, source, MAP, ch.MAP_SCHEMA)
    )
    ev = {n: f.collect() for n, f in evidence(source, bronze, settings).items()}
    reads = getattr(module, "unit_evidence_reads", None)
    read_keys, unit_reads, whole = _whole_reads(ev, reads(dict(bronze), settings) if reads else {})
    scheme = fingerprint([scheme, source, pl.__version__, json_part(whole)])
    digests = ch.chunk_digests(chunk_map, ch.unit_inputs(unit_files, file_ids, unit_reads), scheme)
    redo, gone = ch.stale_chunks(digests, _read(layout, source, DIGESTS, ch.DIGESTS_SCHEMA))
    return ChunkPlan(chunk_map, digests, redo, gone, ev, read_keys)


def _chunk_rows(tagged: Mapping[str, pl.LazyFrame], todo: pl.DataFrame) -> pl.DataFrame:
    """(chunk, rows): bronze rows of each chunk in `todo` (unit → chunk), for grouping."""
    units = pl.concat([f.select(UNIT) for f in tagged.values()]) if tagged else None
    sizes = (
        units.join(todo.rename({"unit": UNIT}).lazy(), on=UNIT, how="inner")
        .group_by(ch.CHUNK)
        .agg(rows=pl.len().cast(pl.Int64))
        .collect()
        if units is not None
        else pl.DataFrame(schema={ch.CHUNK: pl.String, "rows": pl.Int64})
    )
    known = todo.select(ch.CHUNK).unique()
    return known.join(sizes, on=ch.CHUNK, how="left").with_columns(pl.col("rows").fill_null(0))


def _transform_chunks(
    source: str,
    tagged: Mapping[str, pl.LazyFrame],
    settings: Settings,
    plan: ChunkPlan,
    redo: list[str],
) -> dict[str, list[pl.DataFrame]]:
    """Silver of the stale chunks `redo`, tagged with their chunk; their bronze read once."""
    todo = plan.chunk_map.filter(pl.col(ch.CHUNK).is_in(pl.Series(redo, dtype=pl.String).implode()))
    wanted = todo.rename({"unit": UNIT}).lazy()
    joined = {t: f.join(wanted, on=UNIT, maintain_order="left") for t, f in tagged.items()}
    rows = {t: f.collect(engine="streaming") for t, f in joined.items()}  # not whole bronze
    produced: dict[str, list[pl.DataFrame]] = {}
    for chunk in redo:
        units = todo.filter(pl.col(ch.CHUNK) == chunk).get_column("unit")
        part = {
            t: f.filter(pl.col(ch.CHUNK) == chunk).drop(UNIT, ch.CHUNK).lazy()
            for t, f in rows.items()
        }
        ev = _evidence_of(plan.evidence, plan.read_keys, units)
        for table, frame in transform(source, part, settings, ev).items():
            produced.setdefault(table, []).append(frame.with_columns(pl.lit(chunk).alias(ch.CHUNK)))
    return produced


def _commit_group(
    layout: Layout, source: str, produced: Mapping[str, list[pl.DataFrame]], replace: list[str]
) -> None:
    """Replace the chunks `replace` of every cache table by the rows `produced` for them."""
    for table in SILVER_MODELS:
        frames = produced.get(table, [])
        if not frames and not _exists(layout, source, table):
            continue
        schema = pl.Schema({**silver_schema(table), ch.CHUNK: pl.String})
        frame = pl.concat(frames) if frames else pl.DataFrame(schema=schema)
        commit_partitions(_uri(layout, source, table), frame, replace, _options(layout))


def _refresh_chunks(
    layout: Layout,
    source: str,
    tagged: Mapping[str, pl.LazyFrame],
    settings: Settings,
    plan: ChunkPlan,
) -> None:
    """Transform and commit the stale chunks in groups of at most BRONZE_ROWS bronze rows,
    each group released before the next (memory follows a group, not the corpus); the chunk map
    and digests last, so a crash anywhere leaves the unfinished chunks stale. The first group also
    clears the vanished chunks and every later stale one (still stale until the digests are
    written), so a table whose schema changed is rewritten whole there."""
    todo = plan.chunk_map.filter(
        pl.col(ch.CHUNK).is_in(pl.Series(plan.redo, dtype=pl.String).implode())
    )
    sizes = _chunk_rows(tagged, todo)
    groups = list(row_groups(sizes, BRONZE_ROWS)) or [[]]
    for number, group in enumerate(groups):
        produced = _transform_chunks(source, tagged, settings, plan, group)
        replace = [*plan.redo, *plan.gone] if number == 0 else group
        _commit_group(layout, source, produced, replace)
        del produced
        crash_point("silver_units:between_groups")
    for table in SILVER_MODELS:
        if _exists(layout, source, table):
            _vacuum(_uri(layout, source, table), layout)
    overwrite_whole(_uri(layout, source, MAP), plan.chunk_map, _options(layout))
    overwrite_whole(_uri(layout, source, DIGESTS), plan.digests, _options(layout))


def _vacuum(uri: str, layout: Layout) -> None:
    """Old versions of a cache table are never read: their files go at once."""
    delta_cache.vacuum(
        uri, _options(layout), retention_hours=0, enforce_retention_duration=False, dry_run=False
    )


def _exists(layout: Layout, source: str, table: str) -> bool:
    return scan_chunks(layout, source, table, ()) is not None


def cached_silver(
    source: str,
    bronze: Mapping[str, pl.LazyFrame],
    settings: Settings,
    file_ids: pl.DataFrame,
    scheme: str,
) -> dict[str, pl.LazyFrame]:
    """The source's silver contribution (as `units.transform` of the whole bronze would give),
    transforming only stale chunks; `file_ids` (file, file_id) of the source's current files,
    `scheme` what every chunk's silver is a function of (code, settings)."""
    layout = Layout(settings.data_root)
    tagged = source_units(source).unit_keys(dict(bronze), settings)
    plan = _plan(source, tagged, bronze, settings, file_ids, scheme, layout)
    if plan.redo or plan.gone:
        _refresh_chunks(layout, source, tagged, settings, plan)
    scans = {table: scan_chunks(layout, source, table) for table in SILVER_MODELS}
    return {table: frame for table, frame in scans.items() if frame is not None}


def chunk_digests(layout: Layout, source: str) -> pl.DataFrame:
    """The source's chunks in the cache and their digests (chunk, digest, scheme)."""
    return _read(layout, source, DIGESTS, ch.DIGESTS_SCHEMA).rename({ch.CHUNK: CHUNK_COLUMN})


CHUNK_COLUMN = "_chunk"  # a chunk's name, as `scan_chunks(with_chunk=True)` gives it


def _chunk_of(path: str) -> str:
    return path.rsplit(f"/{ch.CHUNK}=", 1)[-1].split("/", 1)[0]


def scan_chunks(
    layout: Layout,
    source: str,
    table: str,
    chunks: Iterable[str] | None = None,
    *,
    with_chunk: bool = False,
) -> pl.LazyFrame | None:
    """A cache table cut to the files of `chunks` (all when None), with the chunk of each row
    in `CHUNK_COLUMN` when `with_chunk`; None when the source has no such table."""
    delta = delta_cache.latest(_uri(layout, source, table), _options(layout))
    if delta is None:
        return None
    paths = file_paths(delta)
    if chunks is not None:
        wanted = set(chunks)
        paths = [p for p in paths if _chunk_of(p) in wanted]
    if not paths:
        arrow = pa.schema(delta.schema().to_arrow()).empty_table()
        empty = pl.from_arrow(arrow).lazy()  # type: ignore[union-attr]
        if ch.CHUNK not in delta.metadata().partition_columns:  # the chunk map and digests
            return empty
        if with_chunk:
            return empty.rename({ch.CHUNK: CHUNK_COLUMN})
        return empty.drop(ch.CHUNK)
    options = _options(layout)
    if not with_chunk:
        return pl.scan_parquet(paths, storage_options=options)
    frames = pl.scan_parquet(
        paths,
        hive_partitioning=True,
        hive_schema={ch.CHUNK: pl.String},
        storage_options=options,
    )
    return frames.rename({ch.CHUNK: CHUNK_COLUMN})
