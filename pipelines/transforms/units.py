"""Silver units: the slices of bronze that a source's transform can turn into silver on their own.

A source's `units.py` tags every bronze row with `_unit` (the silver unit it contributes to: a
session, a scenario, a run, a conversation, a decision session, …) and lists `links` (unit, link):
units sharing a link value (a person, a rater whose other ratings settle a scale, …) must be
transformed together. Units closed under links are *components*; the transform is unit-local when
silver of the whole bronze equals the union of silver over any split of the components. That is
what lets silver be rebuilt per partition (DESIGN §8): a partition holds whole components.

One more optional name in a source's `units.py`: `unit_evidence(bronze, settings)` returns small
tables computed from the WHOLE bronze (e.g. a per-dataset rating range) that a rule looking at
every unit reads; every partial transform is passed them, so such a rule stays exact without
linking all those units into one component. `unit_evidence_reads(bronze, settings)` says which
rows of each evidence table a unit's silver reads ({table: frame of `_unit` and the table's key
columns}): a partition's evidence inputs are those rows only, so a change elsewhere (a new file's
ratings, another dataset's range) does not make it stale; a table without reads is read whole.

And `unit_groups(bronze, settings, evidence)`: each unit's split group (`episodes.group_id` of
the episodes its silver holds) and how many episodes it gives, known from bronze before the
transform, so the partition map can place whole groups and whole components together and size a
batch (partitions/assign.py). A unit that gives no episode (an orphan event, a PRAR run) may have
no group. `evidence` is the source's `unit_evidence` of the same bronze ({} without one): a source
whose groups are evidence (rater or human groups) reads them there instead of deriving them again.

And `unit_shared(bronze, settings)`: frames of the whole bronze that several of the hooks above
derive alike (study's kept session copies, dialogue's kept conversations): `collect_shared`
collects them once, and the plan hands them to every hook but `unit_keys` inside `bronze`, under
their own names; a hook reads one with `shared_frame`, which derives it when it is not there (a
caller that collected none).

And `SCAN_KEYS`: table → a stored column its `_unit` is made from (a session id, a run folder).
The plan lists each unit's values of it, and a group of partitions reads a table through a filter
on that column, which Polars runs inside the Parquet scan; on the computed `_unit` only a join
after reading every row of the units' files could keep the group's rows (transforms/assemble.py).
A table without a key is read by its units' files alone.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping

import polars as pl

from pipelines.config.scores import load_scores, scores_path
from pipelines.config.settings import Settings
from pipelines.schemas import conform, silver_schema
from pipelines.transforms.groups import person_components
from pipelines.transforms.polars_engine import TRANSFORM_ENGINE
from pipelines.transforms.scores import screened_silver

UNIT = "_unit"
LINKS_SCHEMA = pl.Schema({"unit": pl.String, "link": pl.String})
GROUPS_SCHEMA = pl.Schema({"unit": pl.String, "group_id": pl.String, "episodes": pl.Int64})


def source_units(source: str):
    """The source's `pipelines.transforms.<source>.units` module (`unit_keys`, `unit_links`)."""
    return importlib.import_module(f"pipelines.transforms.{source}.units")


def components(units: Iterable[str], links: pl.DataFrame) -> pl.DataFrame:
    """unit, component: the component of units connected by a shared link, named after its
    smallest unit id (a name only; partitions are assigned elsewhere)."""
    frame = pl.DataFrame({"unit": pl.Series(list(units), dtype=pl.String)}).unique()
    frame = frame.with_columns(started_at=pl.lit(None, pl.Datetime("us", "UTC")))
    pairs = links.select("unit", person=pl.col("link"))
    return person_components(frame, pairs).rename({"group": "component"})


def group_clusters(groups: pl.DataFrame, links: pl.DataFrame) -> pl.DataFrame:
    """group_id, cluster: split groups that must share a partition, because a component of
    units (linked units, transformed together) holds units of each (`groups`: unit, group_id;
    `links`: unit, link, both of every source, names qualified so that sources never meet)."""
    by_group = groups.select("unit", link=pl.lit("group\x1f") + pl.col("group_id"))
    pairs = pl.concat([links.select("unit", "link"), by_group])
    joined = components(pairs.get_column("unit").unique(), pairs)
    return (
        groups.join(joined, on="unit", how="inner")
        .select("group_id", cluster="component")
        .unique("group_id")
        .sort("group_id")
    )


def unit_groups(
    source: str,
    bronze: Mapping[str, pl.LazyFrame],
    settings: Settings,
    evidence_frames: Mapping[str, pl.DataFrame | pl.LazyFrame] | None = None,
) -> pl.DataFrame:
    """unit, group_id, episodes: the split group of each unit of this (whole) bronze and the
    episodes it gives (GROUPS_SCHEMA); `evidence_frames`: the source's evidence of this bronze,
    when already computed (else computed here)."""
    if evidence_frames is None:
        evidence_frames = evidence(source, bronze, settings)
    lazy = {name: frame.lazy() for name, frame in evidence_frames.items()}
    frame = source_units(source).unit_groups(dict(bronze), settings, lazy)
    return frame.collect().select(GROUPS_SCHEMA.names()).cast(GROUPS_SCHEMA)


def collect_shared(
    source: str, bronze: Mapping[str, pl.LazyFrame], settings: Settings
) -> dict[str, pl.LazyFrame]:
    """The source's `unit_shared` of this (whole) bronze, collected once; {} without one."""
    compute = getattr(source_units(source), "unit_shared", None)
    frames = {} if compute is None else compute(dict(bronze), settings)
    collected = pl.collect_all(list(frames.values()))
    return {name: frame.lazy() for name, frame in zip(frames, collected, strict=True)}


def shared_frame(
    bronze: Mapping[str, pl.LazyFrame], name: str, derive: Callable[[], pl.LazyFrame]
) -> pl.LazyFrame:
    """`bronze[name]` when the plan collected it (`collect_shared`), else `derive()`."""
    found = bronze.get(name)
    return found if found is not None else derive()


def evidence(
    source: str, bronze: Mapping[str, pl.LazyFrame], settings: Settings
) -> dict[str, pl.LazyFrame]:
    """The source's `unit_evidence` of this (whole) bronze; {} for a source without one."""
    compute = getattr(source_units(source), "unit_evidence", None)
    return {} if compute is None else compute(dict(bronze), settings)


def transform(
    source: str,
    bronze: Mapping[str, pl.LazyFrame],
    settings: Settings,
    evidence: Mapping[str, pl.LazyFrame] | None = None,
) -> dict[str, pl.DataFrame]:
    """The source's silver contribution from these bronze frames, conformed, collected and its
    feedback screened against the score configs (the one place every source's silver passes);
    `evidence` (see `evidence`) when the bronze is only part of the corpus."""
    module = importlib.import_module(f"pipelines.transforms.{source}")
    produced = module.to_silver(dict(bronze), settings, **dict(evidence or {}))
    # on the in-memory engine, as every collect of a partition's transform (polars_engine.py)
    tables = {
        t: conform(f, silver_schema(t)).collect(engine=TRANSFORM_ENGINE)
        for t, f in produced.items()
    }
    where = scores_path()
    return screened_silver(
        source, tables, load_scores(where), where.name, settings.limits.raw_excerpt_chars
    )
