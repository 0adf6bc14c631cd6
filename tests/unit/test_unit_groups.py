"""Each source's `unit_groups` (pipelines/transforms/<source>/units.py) gives, from bronze and
before the transform, the split group the transform gives each episode (`episodes.group_id`) and
how many episodes each unit gives, on the clean and dirty fixtures, the demo at scale 3 (the
smallest where raters link conversations) and one experiment written to two run folders, with and
without `[splits] link_raters`: what lets the partition map place whole groups before silver is
made (partitions/assign.py)."""

import shutil
from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest

import turnlake
from pipelines.config.names import SOURCES
from pipelines.transforms import units as u
from tests.unit._locality import fixture_bronze, fixture_settings

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture(scope="module")
def raw_roots(tmp_path_factory) -> dict[str, Path]:
    demo = tmp_path_factory.mktemp("demo-raw")
    turnlake.demo(raw_root=demo, scale=3)
    twice = tmp_path_factory.mktemp("one-experiment-two-folders")
    run = FIXTURES / "clean" / "outputs" / "social_rl_2025-11-20_101500"
    for folder in ("early_run_a", "early_run_b"):  # both meta.json say experiment_id early_run
        shutil.copytree(run, twice / "outputs" / folder)
    kinds = {"clean": FIXTURES / "clean", "dirty": FIXTURES / "dirty", "demo": demo}
    return kinds | {"two_folders": twice}


def _unit_of_episode(source: str, episodes: pl.DataFrame) -> pl.Expr:
    """The unit an episode comes from, by hand: a Social RL round comes from its run folder's
    unit (`run:<run_dir>`), every other source's episode id is its unit's name."""
    if source == "social_rl":
        return pl.lit("run:") + pl.col("attributes").str.json_path_match("$.run_dir")
    return pl.col("episode_id")


@pytest.mark.parametrize("link_raters", [True, False])
@pytest.mark.parametrize("kind", ["clean", "dirty", "demo", "two_folders"])
@pytest.mark.parametrize("source", SOURCES)
def test_unit_groups_are_the_transforms_group_ids(raw_roots, source, kind, link_raters):
    settings = fixture_settings(raw_roots[kind])
    settings = replace(settings, splits=replace(settings.splits, link_raters=link_raters))
    bronze = fixture_bronze(source, raw_roots[kind], settings)
    episodes = u.transform(source, bronze, settings)["episodes"]
    made = (
        episodes.select(unit=_unit_of_episode(source, episodes), group_id="group_id")
        .group_by("unit", "group_id")
        .agg(episodes=pl.len().cast(pl.Int64))
    )
    known = u.unit_groups(source, bronze, settings)
    assert known.get_column("unit").is_duplicated().sum() == 0, f"{source}: a unit, two groups"
    got = made.join(known, on="unit", how="left", suffix="_known")
    wrong = got.filter(
        pl.col("group_id").ne_missing(pl.col("group_id_known"))
        | pl.col("episodes").ne_missing(pl.col("episodes_known"))
    )
    assert wrong.is_empty(), f"{source}/{kind}: {wrong.head(5).to_dicts()}"
    # a unit that gives no episode counts none
    idle = known.join(made, on="unit", how="anti").filter(pl.col("episodes") != 0)
    assert idle.is_empty(), f"{source}/{kind}: {idle.head(5).to_dicts()}"
    if kind == "demo" and source == "dialogue" and link_raters:
        # conversations sharing a rater: a group of several units is what is tested
        assert made.get_column("group_id").is_duplicated().any()
    if kind == "two_folders" and source == "social_rl":
        assert made.get_column("group_id").unique().to_list() == ["experiment:early_run"]


def test_group_clusters_join_the_groups_of_linked_units_also_through_a_unit_without_a_group():
    groups = pl.DataFrame(
        {
            "unit": ["u1", "u2", "u3", "u5", "u6", "u7"],
            "group_id": ["g1", "g2", "g3", "g5", "g1", "g7"],
        }
    )
    # u1–u2 share L, u6–u7 share P, and u1, u6 are both g1: g1, g2, g7 are one cluster; u4 (no
    # group: an orphan event) shares M with u3 and N with u5: g3, g5 another
    links = pl.DataFrame(
        {
            "unit": ["u1", "u2", "u6", "u7", "u4", "u3", "u4", "u5"],
            "link": ["L", "L", "P", "P", "M", "M", "N", "N"],
        }
    )
    found = u.group_clusters(groups, links)
    together = found.group_by("cluster").agg(pl.col("group_id").sort()).get_column("group_id")
    assert sorted(together.to_list()) == [["g1", "g2", "g7"], ["g3", "g5"]]
