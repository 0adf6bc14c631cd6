"""social_rl silver units (pipelines/transforms/social_rl/units.py): a unit per run folder and per
PRAR run, no links (a run reads its PRAR run's state as evidence); silver of all bronze == union
of silver over any split of the components."""

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


def _bronze() -> dict[str, pl.LazyFrame]:
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
    prar = pl.LazyFrame(
        {
            "run_name": ["p-file", "p-file"],
            "file": ["a/state.json", "b/state.json"],
            "current_step": [3, 4],
        }
    )
    attachments = pl.LazyFrame({"run_kind": ["social_rl", "prar"], "run_dir": ["r3", "p-file"]})
    return {
        "social_rl_rounds": rounds,
        "social_rl_meta": meta,
        "social_rl_prar_states": prar,
        "social_rl_attachments": attachments,
    }


def test_a_run_reads_the_prar_run_its_meta_names_as_evidence_not_a_link():
    bronze = _bronze()
    tagged = {t: f.collect()["_unit"].to_list() for t, f in units.unit_keys(bronze, None).items()}
    assert tagged == {
        "social_rl_rounds": ["run:r1", "run:r1", "run:r2"],
        "social_rl_meta": ["run:r2", "run:r3"],
        "social_rl_prar_states": ["prar:p-file", "prar:p-file"],
        "social_rl_attachments": ["run:r3", "prar:p-file"],
    }
    assert units.unit_links(bronze, None).collect().height == 0
    reads = units.unit_evidence_reads(bronze, None)["prar_runs"].collect()
    # r1 names p-inline in its inline meta, r2 p-file by its state file's folder, r3 none
    assert sorted(reads.rows()) == [("run:r1", "p-inline"), ("run:r2", "p-file")]
    evidence = units.unit_evidence(bronze, None)["prar_runs"].collect()
    # one row per PRAR run name: its first state file
    assert evidence.rows() == [("p-file", "a/state.json", 3)]


def test_without_the_prar_evidence_the_run_context_is_not_local(monkeypatch):
    """A run's episodes carry its PRAR state's file and step: a part holding a run but not its
    PRAR run's state reads them from the evidence, so without it the locality check fails for
    some split (the clean fixture's run names its PRAR run)."""
    monkeypatch.setattr(units, "unit_evidence", lambda *_: {})
    failures = []
    for seed in range(6):
        try:
            assert_unit_local("social_rl", FIXTURES / "clean", parts=2, seed=seed)
        except AssertionError as error:
            failures.append(str(error))
    assert failures
    assert set(failures) == {"social_rl.episodes is not unit-local"}


def test_an_experiment_in_two_run_folders_is_one_split_group_in_two_components(tmp_path):
    """Without experiment links the two folders are two components, each transformed alone, and
    both name the same split group (the partition map, not the components, keeps a group in one
    partition: partitions/assign.py)."""
    run = FIXTURES / "clean" / "outputs" / "social_rl_2025-11-20_101500"
    for folder in ("early_run_a", "early_run_b"):  # both meta.json say experiment_id early_run
        shutil.copytree(run, tmp_path / "outputs" / folder)
    with pytest.raises(AssertionError, match=r"over components: \['experiment:early_run'\]"):
        assert_groups_whole("social_rl", tmp_path)
