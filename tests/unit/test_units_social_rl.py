"""social_rl silver units (pipelines/transforms/social_rl/units.py): a unit per run folder and per
PRAR run, linked where a run's meta names the PRAR run; silver of all bronze == union of silver
over any split of the components."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import polars as pl
import pytest

from pipelines.demo import social_rl as demo_social_rl
from pipelines.transforms.social_rl import units
from tests.unit._locality import assert_groups_whole, assert_unit_local

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture(scope="module")
def demo_roots(tmp_path_factory) -> dict[int, Path]:
    roots = {}
    for seed in (1, 2, 3, 4):
        root = tmp_path_factory.mktemp(f"social-rl-demo-{seed}")
        demo_social_rl.write(root, random.Random(f"{seed}:social_rl"), 1)
        roots[seed] = root
    return roots


@pytest.mark.parametrize(("kind", "at_least"), [("clean", 3), ("dirty", 1)])
def test_fixtures_are_unit_local(kind, at_least):
    for seed in range(3):
        assert assert_unit_local("social_rl", FIXTURES / kind, parts=2, seed=seed) >= at_least


@pytest.mark.parametrize(("seed", "parts"), [(1, 2), (2, 3), (3, 4), (4, 5)])
def test_demo_is_unit_local(demo_roots, seed, parts):
    assert assert_unit_local("social_rl", demo_roots[seed], parts=parts, seed=seed) > parts


def test_runs_and_the_prar_runs_their_meta_names_share_a_link():
    rounds = pl.LazyFrame(
        {
            "run_dir": ["r1", "r1", "r2"],
            "meta": [None, '{"prar_run_id": "p-inline", "experiment_id": "e1"}', None],
        }
    )
    meta = pl.LazyFrame(
        {
            "run_dir": ["r2", "r3"],
            "experiment_id": [None, "e1"],
            "prar_run_id": [None, None],
            "prar_state_file": ["prar/outputs/p-file/state.json", None],
        }
    )
    prar = pl.LazyFrame({"run_name": ["p-file"]})
    attachments = pl.LazyFrame({"run_kind": ["social_rl", "prar"], "run_dir": ["r3", "p-file"]})
    bronze = {
        "social_rl_rounds": rounds,
        "social_rl_meta": meta,
        "social_rl_prar_states": prar,
        "social_rl_attachments": attachments,
    }
    tagged = {t: f.collect()["_unit"].to_list() for t, f in units.unit_keys(bronze, None).items()}
    assert tagged == {
        "social_rl_rounds": ["run:r1", "run:r1", "run:r2"],
        "social_rl_meta": ["run:r2", "run:r3"],
        "social_rl_prar_states": ["prar:p-file"],
        "social_rl_attachments": ["run:r3", "prar:p-file"],
    }
    links = units.unit_links(bronze, None).collect().sort("unit", "link")
    assert links.rows() == [
        ("prar:p-file", "prar:p-file"),
        ("prar:p-inline", "prar:p-inline"),
        ("run:r1", "experiment:e1"),
        ("run:r1", "prar:p-inline"),
        ("run:r2", "prar:p-file"),
        ("run:r3", "experiment:e1"),
    ]


def test_without_prar_links_the_run_context_is_not_local(monkeypatch):
    """A run's episodes carry its PRAR state's file and step: dropping the run ↔ PRAR link must
    fail the locality check for some split (the clean fixture's run names its PRAR run)."""
    monkeypatch.setattr(units, "unit_links", lambda *_: pl.LazyFrame(schema=units.LINKS_SCHEMA))
    failures = []
    for seed in range(6):
        try:
            assert_unit_local("social_rl", FIXTURES / "clean", parts=2, seed=seed)
        except AssertionError as error:
            failures.append(str(error))
    assert failures
    assert set(failures) == {"social_rl.episodes is not unit-local"}


def test_an_experiment_in_two_run_folders_is_one_component(tmp_path, monkeypatch):
    """`experiment:<id>` links keep one split group in one component (and so one partition):
    without them the experiment's two folders fall into two components."""
    run = FIXTURES / "clean" / "outputs" / "social_rl_2025-11-20_101500"
    for folder in ("early_run_a", "early_run_b"):  # both meta.json say experiment_id early_run
        shutil.copytree(run, tmp_path / "outputs" / folder)
    assert assert_groups_whole("social_rl", tmp_path) == 1
    metas = units._metas
    monkeypatch.setattr(
        units, "_metas", lambda b: metas(b).with_columns(experiment_id=pl.lit(None, pl.String))
    )
    with pytest.raises(AssertionError, match="groups split over components"):
        assert_groups_whole("social_rl", tmp_path)
