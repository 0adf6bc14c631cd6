"""`oasst` silver is unit-local (pipelines/transforms/oasst/units.py): one unit per message tree,
no links — silver of the whole bronze equals the union of silver over any split of the trees."""

from __future__ import annotations

import pytest

from pipelines.transforms import units as u
from pipelines.transforms.oasst import units as oasst_units
from tests.unit._locality import PROJECT, assert_unit_local, fixture_settings
from tests.unit._unit_corpora import FIXTURES, bronze_rows, demo_raw

SOURCE, TREES = "oasst", "oasst_trees"
SETTINGS = fixture_settings(PROJECT / "tests" / "fixtures" / "clean")


@pytest.mark.parametrize("kind", ["clean", "dirty"])
@pytest.mark.parametrize("parts", [2, 3])
def test_fixture_silver_is_unit_local(kind, parts):
    assert assert_unit_local(SOURCE, FIXTURES / kind, parts=parts, seed=parts) >= 1


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_demo_silver_is_unit_local_for_two_to_five_parts(tmp_path, seed):
    # The demo writes 3 trees per scale step: scale 2 and the clean fixture make enough.
    raw = demo_raw(SOURCE, tmp_path / "raw", seed, scale=2, with_clean=True)
    for parts in range(2, 6):
        assert assert_unit_local(SOURCE, raw, parts=parts, seed=seed) > parts


def test_unit_keys_and_links_by_hand():
    """Both copies of tree t1 (two files) are its unit; t2 has its own; nothing links trees."""
    rows = [
        {"file": f, "locator": "line 1", "line": 1, "dataset": "en", "message_tree_id": t}
        for f, t in (
            ("oasst/en/a.jsonl", "t1"),
            ("oasst/en/b.jsonl", "t1"),
            ("oasst/en/b.jsonl", "t2"),
        )
    ]
    bronze = {TREES: bronze_rows(SOURCE, TREES, rows)}
    tagged = oasst_units.unit_keys(bronze, SETTINGS)
    assert tagged[TREES].collect().get_column(u.UNIT).to_list() == [
        "oasst:t1",
        "oasst:t1",
        "oasst:t2",
    ]
    assert oasst_units.unit_links(bronze, SETTINGS).collect().height == 0
