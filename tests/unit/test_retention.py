"""Retention of table history (`[retention] keep_days`) with a fixed clock: snapshot records older
than the cutoff are pruned (a run of them left as one record without tables), but never the one
in force at the cutoff, the current one, or one a release's manifest names; Delta files only those
pruned versions needed are vacuumed."""

from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import polars as pl
import pytest

from pipelines.storage import tables
from pipelines.storage.layout import Layout
from pipelines.storage.retention import PRUNED
from pipelines.warehouse.garbage import collect_garbage

# The fixed clock runs ahead of the real one, so the real age of the Delta files (seconds) never
# keeps them: only the snapshot records decide.
NOW = datetime.now(UTC) + timedelta(days=400)
DAY = timedelta(days=1)
# when each of the four builds published (rewritten into the log): 90, 60, 20 and 5 days ago
AGES = (90, 60, 20, 5)


def _four_builds(layout: Layout) -> list[tables.Snapshot]:
    """Four snapshots of silver table `a`, holding [0], [1], [2], [3], published AGES days ago."""
    for value in range(4):
        tables.publish(layout, "silver", {"a": pl.DataFrame({"x": [value]})})
    entries = [
        tables.Snapshot("silver", s.versions, s.meta, (NOW - age * DAY).isoformat())
        for s, age in zip(tables.history(layout, "silver"), AGES, strict=True)
    ]
    tables.replace_history(layout, "silver", entries)
    return entries


def _release_naming(layout: Layout, versions: dict[str, int]) -> None:
    folder = layout.exports / "20260101-0123456789"
    folder.mkdir(parents=True)
    manifest = {"created_at": "2026-01-01T00:00:00+00:00", "table_versions": {"silver": versions}}
    (folder / "manifest.json").write_bytes(orjson.dumps(manifest))


def _as_of(layout: Layout, days_ago: float) -> list[int] | None:
    moment = NOW - days_ago * DAY
    if not tables.exists(layout, "silver", "a", moment):
        return None
    return tables.read(layout, "silver", "a", moment)["x"].to_list()


def test_history_older_than_keep_days_is_pruned_but_not_the_snapshot_in_force_then(tmp_path):
    layout = Layout(tmp_path)
    entries = _four_builds(layout)
    done = collect_garbage(layout, keep_days=30, now=NOW)  # cutoff: 30 days ago
    # by hand: 90 and 60 days are older than the cutoff; the 60-day one is in force at it, so
    # it stays with the 20- and 5-day ones; the 90-day one becomes a gap
    kept = tables.history(layout, "silver")
    assert [s.versions for s in kept] == [
        {},
        entries[1].versions,
        *(e.versions for e in entries[2:]),
    ]
    assert kept[0].meta == {PRUNED: "true"} and kept[0].published_at == entries[0].published_at
    assert done.records_removed == 1
    assert _as_of(layout, 89) is None  # inside the pruned run: refused, not an older snapshot
    assert _as_of(layout, 45) == [1] and _as_of(layout, 10) == [2] and _as_of(layout, 0) == [3]


def test_pruned_versions_lose_their_files_and_kept_ones_keep_them(tmp_path):
    layout = Layout(tmp_path)
    entries = _four_builds(layout)
    uri = tables.table_uri(layout, "silver", "a")
    files_of = {
        v: set(tables.file_paths(tables.DeltaTable(uri, version=v)))
        for v in (e.versions["a"] for e in entries)
    }
    done = collect_garbage(layout, keep_days=30, now=NOW)
    first = entries[0].versions["a"]
    assert sorted(Path(f).name for f in done.files_removed) == sorted(
        Path(f).name for f in files_of[first]
    )
    for version, paths in files_of.items():
        assert all(Path(p).exists() == (version != first) for p in paths)


def test_a_version_a_release_names_is_never_pruned(tmp_path):
    layout = Layout(tmp_path)
    entries = _four_builds(layout)
    _release_naming(layout, entries[0].versions)
    done = collect_garbage(layout, keep_days=0, now=NOW)  # keep nothing but pins and current
    kept = tables.history(layout, "silver")
    # by hand: the 90-day one (pinned), a gap for the 60- and 20-day ones, the current one
    assert [s.versions for s in kept] == [entries[0].versions, {}, entries[3].versions]
    assert done.records_removed == 2
    assert _as_of(layout, 80) == [0] and _as_of(layout, 50) is None and _as_of(layout, 1) == [3]


def test_a_second_pass_a_day_later_changes_nothing(tmp_path):
    layout = Layout(tmp_path)
    _four_builds(layout)
    collect_garbage(layout, keep_days=0, now=NOW)
    once = tables.history(layout, "silver")
    on_disk = sorted(p for p in tmp_path.rglob("*.parquet"))
    again = collect_garbage(layout, keep_days=0, now=NOW + DAY)
    assert tables.history(layout, "silver") == once
    assert again.records_removed == 0
    assert sorted(p for p in tmp_path.rglob("*.parquet")) == on_disk


def test_an_as_of_release_inside_pruned_history_is_refused_naming_the_retention(tmp_path):
    import turnlake

    layout = Layout(tmp_path / "data")
    for value in range(3):
        tables.publish(layout, "gold", {"a": pl.DataFrame({"x": [value]})})
    entries = [
        tables.Snapshot("gold", s.versions, s.meta, (NOW - age * DAY).isoformat())
        for s, age in zip(tables.history(layout, "gold"), (90, 60, 5), strict=True)
    ]
    tables.replace_history(layout, "gold", entries)
    collect_garbage(layout, keep_days=30, now=NOW)  # the 90-day one is pruned
    (tmp_path / "raw").mkdir()
    with pytest.raises(turnlake.NotBuilt, match=r"older than `\[retention\] keep_days`"):
        turnlake.release(
            raw_root=tmp_path / "raw", data_root=layout.data_root, as_of=NOW - 80 * DAY
        )
