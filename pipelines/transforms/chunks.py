"""Silver chunks: which bronze units a source's transform turns into silver together, so that a
build transforms again only the chunks whose inputs changed (pipelines/transforms/unit_cache.py).

A chunk is a union of whole components (units.py: units linked by a shared person, rater, …), so
silver of the corpus is the union of silver of its chunks. A unit's chunk is sticky, like a split
group's partition (pipelines/partitions/assign.py): `b<batch>-k<bucket>`, the build that first saw
it and a hash bucket of its component. New data lands in the new batch's chunks; a late feedback
event changes its old conversation's chunk only; a component that grows to join units of several
chunks moves to the earliest of them (every chunk it touched is transformed again).

A chunk's digest covers its units and what their silver is a function of: the file ids (content
fingerprints) of the files holding their bronze rows and the evidence rows they read
(units.evidence_read); what every unit reads (code, settings, evidence read whole) is the scheme:
a new scheme makes every chunk stale.
"""

from __future__ import annotations

import hashlib

import polars as pl

CHUNK = "_partition"  # the partition column of the cache tables (storage/delta_writes.py)
BUCKETS = 16  # at most, chunks per landing batch
COMPONENTS_PER_BUCKET = 1_000  # at least: a transform call has a fixed cost, worth it on big chunks
MAP_SCHEMA = pl.Schema({"unit": pl.String, CHUNK: pl.String})
DIGESTS_SCHEMA = pl.Schema({CHUNK: pl.String, "digest": pl.String, "scheme": pl.String})


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _bucket(component: str, buckets: int) -> int:
    return int(_sha(component)[:8], 16) % buckets


def assign_chunks(
    components: pl.DataFrame, previous: pl.DataFrame, buckets: int | None = None
) -> pl.DataFrame:
    """(unit, component) and the previous (unit, chunk) map → the map (MAP_SCHEMA) of these
    units: a component keeps the earliest chunk any of its units had; a component of only new
    units gets the next batch and a bucket of its name, among `buckets` (by default one per
    COMPONENTS_PER_BUCKET new components, at most BUCKETS: fixed once assigned)."""
    known = components.join(previous, on="unit", how="inner")
    kept = known.group_by("component").agg(pl.col(CHUNK).min())
    fresh = components.join(kept, on="component", how="anti").select("component").unique()
    if buckets is None:
        buckets = max(1, min(BUCKETS, fresh.height // COMPONENTS_PER_BUCKET))
    last = previous.get_column(CHUNK).str.slice(1, 5).cast(pl.Int64).max()
    batch = 0 if last is None else int(last) + 1  # type: ignore[arg-type]
    named = fresh.with_columns(
        pl.col("component")
        .map_elements(lambda c: f"b{batch:05d}-k{_bucket(c, buckets):02d}", return_dtype=pl.String)
        .alias(CHUNK)
    )
    chunks = pl.concat([kept, named.select("component", CHUNK)])
    return components.join(chunks, on="component").select("unit", CHUNK).sort("unit")


def unit_inputs(
    unit_files: pl.DataFrame, file_ids: pl.DataFrame, reads: pl.DataFrame
) -> pl.DataFrame:
    """unit, inputs: the sorted file ids of the files holding a unit's bronze rows
    (`unit_files`: unit, file; `file_ids`: file, file_id) and the digests of the evidence rows
    it reads (`reads`: unit, read)."""
    files = unit_files.join(file_ids, on="file", how="left").select(
        "unit", item=pl.lit("f:") + pl.col("file_id").fill_null("?" + pl.col("file"))
    )
    items = pl.concat([files, reads.select("unit", item=pl.lit("e:") + pl.col("read"))])
    return (
        items.unique().group_by("unit").agg(pl.col("item").sort().str.join("\x1f").alias("inputs"))
    )


def chunk_digests(chunk_map: pl.DataFrame, inputs: pl.DataFrame, scheme: str) -> pl.DataFrame:
    """One row per chunk (DIGESTS_SCHEMA): the digest of its units and their inputs."""
    per_unit = chunk_map.join(inputs, on="unit", how="left").with_columns(
        pl.col("inputs").fill_null("")
    )
    joined = per_unit.group_by(CHUNK).agg(
        pl.concat_str("unit", pl.lit("\x1e"), "inputs").sort().str.join("\x1d").alias("_all")
    )
    return joined.select(
        CHUNK,
        digest=pl.col("_all").map_elements(_sha, return_dtype=pl.String),
        scheme=pl.lit(scheme),
    ).sort(CHUNK)


def stale_chunks(current: pl.DataFrame, previous: pl.DataFrame) -> tuple[list[str], list[str]]:
    """(chunks to transform: new or with another digest or scheme, chunks that vanished)."""
    same = current.join(previous, on=[CHUNK, "digest", "scheme"], how="semi")
    redo = sorted(set(current.get_column(CHUNK)) - set(same.get_column(CHUNK)))
    gone = sorted(set(previous.get_column(CHUNK)) - set(current.get_column(CHUNK)))
    return redo, gone
