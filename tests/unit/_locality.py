"""Checks that a source's transform is unit-local (pipelines/transforms/units.py): silver of the
whole bronze equals the union of silver over a random split of its components."""

from __future__ import annotations

import importlib
import random
from collections.abc import Iterable, Mapping
from pathlib import Path

import polars as pl

from pipelines.config.settings import Settings, settings_from_config
from pipelines.schemas import polars_schema
from pipelines.schemas.bronze import bronze_models
from pipelines.transforms import units as u

PROJECT = Path(__file__).resolve().parents[2]
# Content-addressed tables: build_silver keeps one row per key, so the same blob produced by two
# parts (two scenarios with one context) is one row, not a locality failure.
DEDUPED_ON = {"contexts": "context_hash"}


def restrict(
    tagged: Mapping[str, pl.LazyFrame], units: pl.Series | Iterable[str]
) -> dict[str, pl.LazyFrame]:
    """Bronze tagged by `unit_keys`, cut to the rows of `units`, `_unit` dropped."""
    keep = pl.Series(list(units), dtype=pl.String)
    return {
        table: frame.filter(pl.col(u.UNIT).is_in(keep.implode())).drop(u.UNIT)
        for table, frame in tagged.items()
    }


def evidence_read(
    source: str,
    bronze: Mapping[str, pl.LazyFrame],
    settings: Settings,
    evidence: Mapping[str, pl.LazyFrame],
    units: pl.Series | Iterable[str],
) -> dict[str, pl.LazyFrame]:
    """The rows of `evidence` (of the whole bronze) that `units` read, by the source's
    `unit_evidence_reads` of the whole bronze: the rule the plan applies to precomputed reads
    (transforms/assemble.py `_evidence_of`)."""
    compute = getattr(u.source_units(source), "unit_evidence_reads", None)
    reads = {} if compute is None else compute(dict(bronze), settings)
    mine = pl.Series(list(units), dtype=pl.String).implode()
    out = {}
    for name, table in evidence.items():
        if name not in reads:
            out[name] = table
            continue
        keys = [c for c in reads[name].collect_schema().names() if c != u.UNIT]
        wanted = reads[name].filter(pl.col(u.UNIT).is_in(mine)).select(keys).unique()
        out[name] = table.join(wanted, on=keys, how="semi", nulls_equal=True)
    return out


def fixture_settings(raw_root: Path) -> Settings:
    return settings_from_config(raw_root, raw_root / "_unused", PROJECT / "turnlake.toml")


def fixture_bronze(source: str, raw_root: Path, settings: Settings) -> dict[str, pl.LazyFrame]:
    """Bronze of one source from a raw folder through its real adapter (no Dagster)."""
    adapter = importlib.import_module(f"pipelines.sources.{source}")
    parts: dict[str, list[pl.DataFrame]] = {t: [] for t in bronze_models(source)}
    for raw in adapter.discover(raw_root):
        result = adapter.parse_file(raw, raw.path.read_bytes(), settings)
        for table, frame in result.tables.items():
            parts[table].append(frame)
    return {
        t: (pl.concat(parts[t]) if parts[t] else pl.DataFrame(schema=polars_schema(m))).lazy()
        for t, m in bronze_models(source).items()
    }


def _sorted(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.sort(frame.columns, nulls_last=True)


def assert_unit_local(source: str, raw_root: Path, parts: int = 3, seed: int = 0) -> int:
    """Silver(all) == ∪ silver(part) for a random split of the components into `parts`; returns
    the number of components (a test should also assert it is > parts, or the split is empty)."""
    settings = fixture_settings(raw_root)
    return assert_bronze_unit_local(
        source, fixture_bronze(source, raw_root, settings), settings, parts, seed
    )


def assert_bronze_unit_local(
    source: str, bronze: dict[str, pl.LazyFrame], settings: Settings, parts: int, seed: int
) -> int:
    """`assert_unit_local` on bronze frames given as they are (a test's hand-made rows)."""
    module = u.source_units(source)
    tagged = module.unit_keys(bronze, settings)
    links = module.unit_links(bronze, settings).collect()
    for table, frame in bronze.items():
        rows = (frame.select(pl.len()).collect().item(), tagged[table].select(pl.len()).collect())
        assert rows[0] == rows[1].item(), f"{source}: unit_keys changed the rows of {table}"
    units = pl.concat([f.select(u.UNIT) for f in tagged.values()]).collect().to_series()
    assert units.null_count() == 0, f"{source}: a bronze row has no unit"
    comps = u.components(units.unique(), links)
    names = sorted(set(comps.get_column("component")))
    rng = random.Random(seed)
    bucket = {name: rng.randrange(parts) for name in names}
    whole = u.transform(source, bronze, settings)
    evidence = {k: f.collect().lazy() for k, f in u.evidence(source, bronze, settings).items()}
    pieces: dict[str, list[pl.DataFrame]] = {t: [] for t in whole}
    for k in range(parts):
        members = comps.filter(pl.col("component").map_elements(bucket.get, pl.Int64) == k)
        mine = members.get_column("unit")
        read = evidence_read(source, bronze, settings, evidence, mine)
        for table, frame in u.transform(source, restrict(tagged, mine), settings, read).items():
            pieces.setdefault(table, []).append(frame)
    for table, frame in whole.items():
        union = pl.concat(pieces[table]) if pieces[table] else frame.clear()
        if table in DEDUPED_ON:
            union = union.unique(DEDUPED_ON[table], keep="first")
        assert _sorted(union).equals(_sorted(frame)), f"{source}.{table} is not unit-local"
    return len(names)


def assert_groups_whole(source: str, raw_root: Path) -> int:
    """Every split group (episodes.group_id) comes out of one component only, so a partition of
    whole components never splits a group (DESIGN §8); returns the number of groups."""
    settings = fixture_settings(raw_root)
    bronze = fixture_bronze(source, raw_root, settings)
    module = u.source_units(source)
    tagged = module.unit_keys(bronze, settings)
    links = module.unit_links(bronze, settings).collect()
    units = pl.concat([f.select(u.UNIT) for f in tagged.values()]).collect().to_series()
    evidence = {k: f.collect().lazy() for k, f in u.evidence(source, bronze, settings).items()}
    seen = []
    for (name,), members in u.components(units.unique(), links).group_by("component"):
        part = restrict(tagged, members.get_column("unit"))
        silver = u.transform(source, part, settings, evidence)
        seen.append(silver["episodes"].select("group_id", component=pl.lit(name)))
    groups = pl.concat(seen).group_by("group_id").agg(pl.col("component").n_unique())
    split = groups.filter(pl.col("component") > 1).get_column("group_id").sort().to_list()
    assert not split, f"{source}: groups split over components: {split[:5]}"
    return groups.height
