"""Scenario silver units (pipelines/transforms/scenario/units.py): one unit per scenario, no
links; silver of all bronze == union of silver over any split of the scenarios."""

from __future__ import annotations

import random
from pathlib import Path

import orjson
import polars as pl
import pytest

from pipelines.demo import scenario as demo_scenario
from pipelines.transforms.scenario import units
from tests.unit._locality import assert_groups_whole, assert_unit_local

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture(scope="module")
def demo_roots(tmp_path_factory) -> dict[int, Path]:
    roots = {}
    for seed in (1, 2, 3, 4):
        root = tmp_path_factory.mktemp(f"scenario-demo-{seed}")
        demo_scenario.write(root, random.Random(f"{seed}:scenario"), 1)
        roots[seed] = root
    return roots


@pytest.mark.parametrize("kind", ["clean", "dirty"])
def test_fixtures_are_unit_local(kind):
    for seed in range(3):
        assert assert_unit_local("scenario", FIXTURES / kind, parts=2, seed=seed) > 2


@pytest.mark.parametrize(("seed", "parts"), [(1, 2), (2, 3), (3, 4), (4, 5)])
def test_demo_is_unit_local(demo_roots, seed, parts):
    assert assert_unit_local("scenario", demo_roots[seed], parts=parts, seed=seed) > parts


def test_unit_is_the_scenario_whatever_file_holds_it():
    entries = pl.LazyFrame(
        {
            "scenario_id": ["S-1", "S-1", "S-2"],
            "file": ["active/S-1/d.jsonl", "completed/S-1/d.jsonl", "completed/S-2/d.jsonl"],
        }
    )
    metadata = pl.LazyFrame({"scenario_id": ["S-2"], "file": ["completed/S-2/d.jsonl"]})
    bronze = {"scenario_entries": entries, "scenario_metadata": metadata}
    tagged = units.unit_keys(bronze, None)
    assert tagged["scenario_entries"].collect()["_unit"].to_list() == [
        "scenario:S-1",
        "scenario:S-1",
        "scenario:S-2",
    ]
    assert tagged["scenario_metadata"].collect()["_unit"].to_list() == ["scenario:S-2"]
    assert units.unit_links(bronze, None).collect().height == 0


def test_a_unit_per_file_splits_a_scenario_copy_and_is_not_local(demo_roots, monkeypatch):
    """The demo leaves a finished scenario's copy in active/: choosing among copies looks across
    files, so keying units by file must fail the locality check for some split."""
    monkeypatch.setattr(
        units,
        "unit_keys",
        lambda bronze, _settings: {
            table: frame.with_columns(_unit=pl.col("file")) for table, frame in bronze.items()
        },
    )
    failures = 0
    for seed in range(6):
        try:
            assert_unit_local("scenario", demo_roots[1], parts=2, seed=seed)
        except AssertionError:
            failures += 1
    assert failures > 0


def _entry(scenario: str, context: dict) -> bytes:
    record = {
        "timestamp": "2025-11-21T15:30:45Z",
        "scenario_id": scenario,
        "phase": "phase_1",
        "round": 1,
        "interaction_type": "checkpoint",
        "context": context,
        "moderator_message": {"content": "Round 1 done.", "message_type": "checkpoint_prompt"},
    }
    return orjson.dumps(record) + b"\n"


def test_two_scenarios_with_one_context_are_still_local(tmp_path):
    """A context blob is content-addressed (build_silver keeps one row per hash): two scenarios
    sharing one need no link, the whole build and the split both publish it once."""
    for scenario in ("S-A", "S-B", "S-C"):
        folder = tmp_path / "scenarios" / "completed" / scenario
        folder.mkdir(parents=True)
        (folder / "moderator_dialog.jsonl").write_bytes(_entry(scenario, {"checkpoint_number": 1}))
    for seed in range(4):
        assert assert_unit_local("scenario", tmp_path, parts=2, seed=seed) == 3


def test_a_scenario_is_its_own_group(demo_roots):
    assert assert_groups_whole("scenario", demo_roots[1]) > 1
