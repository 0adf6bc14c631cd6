"""`hh_rlhf` silver is unit-local (pipelines/transforms/hh_rlhf/units.py): one unit per pair;
pairs answering one prompt are linked (their split group stays in one partition)."""

from __future__ import annotations

import json

import polars as pl
import pytest

from pipelines.transforms import units as u
from pipelines.transforms.hh_rlhf import units as hh_units
from tests.unit._locality import (
    PROJECT,
    assert_groups_whole,
    assert_unit_local,
    fixture_settings,
)
from tests.unit._unit_corpora import FIXTURES, bronze_rows, demo_raw

SOURCE, PAIRS = "hh_rlhf", "hh_rlhf_pairs"
SETTINGS = fixture_settings(PROJECT / "tests" / "fixtures" / "clean")


@pytest.mark.parametrize("kind", ["clean", "dirty"])
@pytest.mark.parametrize("parts", [2, 3])
def test_fixture_silver_is_unit_local(kind, parts):
    assert assert_unit_local(SOURCE, FIXTURES / kind, parts=parts, seed=parts) >= 1


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_demo_silver_is_unit_local_for_two_to_five_parts(tmp_path, seed):
    # The demo's pairs are fixed (4 prompts; a seed only shuffles them): with the clean fixture, 7.
    raw = demo_raw(SOURCE, tmp_path / "raw", seed, with_clean=True)
    for parts in range(2, 6):
        assert assert_unit_local(SOURCE, raw, parts=parts, seed=seed) > parts


def test_unit_keys_links_and_components_by_hand():
    """p1 twice (two files) and p2 answer prompt P, p3 answers Q: units per pair, one component
    for P's pairs."""
    rows = [
        {
            "file": f,
            "locator": "line 1",
            "line": 1,
            "dataset": "helpful",
            "pair_id": p,
            "prompt_id": q,
        }
        for f, p, q in (("a", "p1", "P"), ("b", "p1", "P"), ("b", "p2", "P"), ("b", "p3", "Q"))
    ]
    bronze = {PAIRS: bronze_rows(SOURCE, PAIRS, rows)}
    units = hh_units.unit_keys(bronze, SETTINGS)[PAIRS].collect().get_column(u.UNIT).to_list()
    assert units == [
        "hh_rlhf:helpful/p1",
        "hh_rlhf:helpful/p1",
        "hh_rlhf:helpful/p2",
        "hh_rlhf:helpful/p3",
    ]
    links = hh_units.unit_links(bronze, SETTINGS).collect()
    assert sorted(links.rows()) == [
        ("hh_rlhf:helpful/p1", "prompt:P"),
        ("hh_rlhf:helpful/p2", "prompt:P"),
        ("hh_rlhf:helpful/p3", "prompt:Q"),
    ]
    components = u.components(units, links).sort("unit")
    assert components.rows() == [
        ("hh_rlhf:helpful/p1", "hh_rlhf:helpful/p1"),
        ("hh_rlhf:helpful/p2", "hh_rlhf:helpful/p1"),
        ("hh_rlhf:helpful/p3", "hh_rlhf:helpful/p3"),
    ]


def _answers(prompt: str, chosen: str, rejected: str) -> str:
    ask = f"\n\nHuman: {prompt}\n\nAssistant: "
    return json.dumps({"chosen": ask + chosen, "rejected": ask + rejected})


def test_split_groups_are_whole_components(tmp_path, monkeypatch):
    """Pairs answering one prompt are one split group: `prompt:` links keep it in one component
    (the demo answers every prompt once, so a file answering one twice is added)."""
    raw = demo_raw(SOURCE, tmp_path / "raw", seed=1)
    twice = raw / "hh_rlhf" / "helpful-twice" / "train.jsonl"
    twice.parent.mkdir(parents=True)
    lines = [_answers("Name a prime.", "7", "8"), _answers("Name a prime.", "Two.", "Four.")]
    twice.write_text("\n".join(lines) + "\n")
    assert assert_groups_whole(SOURCE, raw) > 1
    links = hh_units.unit_links
    monkeypatch.setattr(
        hh_units,
        "unit_links",
        lambda b, s: links(b, s).filter(~pl.col("link").str.starts_with("prompt:")),
    )
    with pytest.raises(AssertionError, match="groups split over components"):
        assert_groups_whole(SOURCE, raw)
