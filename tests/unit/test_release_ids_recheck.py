"""A stored privatized entry made under other subject ids is rechecked against the ids that came
or went: that difference is taken once per earlier ids entry, not once per stored entry."""

from __future__ import annotations

import polars as pl

from pipelines.release.build import parts
from pipelines.release.build.datasets import TEXTS
from pipelines.release.store import part_cache


def _ids(root, key: str, ids: list[str]) -> None:
    part_cache.save(root, key, {}, {"ids": pl.DataFrame({"id": ids}, schema={"id": pl.String})})


def test_the_ids_that_came_or_went_are_both_sides_of_the_difference_sorted(tmp_path):
    _ids(tmp_path, "ids-old", ["ann", "bob", "cy"])
    assert parts.changed_ids(tmp_path, ["ann", "cy", "dee"], "ids-old") == ["bob", "dee"]
    assert parts.changed_ids(tmp_path, ["ann", "bob", "cy"], "ids-old") == []


def test_an_earlier_ids_entry_gone_from_the_store_means_the_difference_is_unknown(tmp_path):
    assert parts.changed_ids(tmp_path, ["ann"], "ids-gone") is None


def test_stored_entries_made_under_the_same_earlier_ids_load_those_ids_once(tmp_path, monkeypatch):
    _ids(tmp_path, "ids-old", ["ann", "bob"])
    for n in (1, 2, 3):
        texts = pl.DataFrame({"text": [f"hello from unit {n}"]})
        part_cache.save(tmp_path, f"built-{n}", {}, {TEXTS: texts})
        part_cache.save(tmp_path, f"private-{n}", {"ids": "ids-old"}, {})
    loads = []
    load = part_cache.load

    def counted(root, key, names=None):
        loads.append(key)
        return load(root, key, names)

    monkeypatch.setattr(part_cache, "load", counted)
    changed_since = parts.ids_difference(tmp_path, ["ann", "cy"])
    hows = [
        parts._reused(tmp_path, (f"built-{n}", f"private-{n}"), "ids-new", changed_since)[1]
        for n in (1, 2, 3)
    ]
    # "bob" went and "cy" came: no text names either, so every entry is kept for the new ids
    assert hows == ["rechecked"] * 3
    assert loads.count("ids-old") == 1
    assert [part_cache.load(tmp_path, f"private-{n}", ())[0]["ids"] for n in (1, 2, 3)] == [
        "ids-new"
    ] * 3
