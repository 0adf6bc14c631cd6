"""The registry of what can hold subject data (storage/subject_data.py): every path `Layout`
names is classified, files map to the holder they belong to, and `delete_caches` deletes
exactly the holders `forget` deletes whole."""

from dataclasses import fields
from pathlib import Path

import pytest

from pipelines.storage.layout import Layout
from pipelines.storage.subject_data import CONTAINERS, HOLDERS, delete_caches, holder_of


def test_every_attribute_of_layout_is_classified_in_the_registry():
    public = {name for name in dir(Layout) if not name.startswith("_")}
    public |= {field.name for field in fields(Layout)}
    classified = {h.attr for h in HOLDERS} | set(CONTAINERS)
    assert public - classified == set(), "a Layout path nobody classified for `forget`"
    assert classified - public == set(), "a registry entry for a path Layout no longer has"


def test_each_layout_attribute_has_one_holder():
    attrs = [h.attr for h in HOLDERS]
    assert sorted(attrs) == sorted(set(attrs))
    assert not set(attrs) & set(CONTAINERS)


@pytest.mark.parametrize(
    ("relative", "attr"),
    [
        ("warehouse/bronze/study_sessions/part_id=x/a.parquet", "bronze_dir"),
        ("warehouse/bronze/_ingest/study/_delta_log/0.json", "ingest_log"),
        ("warehouse/bronze/_quarantine/study/part_id=x/a.parquet", "parse_quarantine_dir"),
        ("warehouse/tables/silver/turns/a.parquet", "table_dir"),
        ("warehouse/tables/silver/_snapshots.jsonl", "table_dir"),  # erased alike
        ("warehouse/tables/silver_units/study.turns/a.parquet", "silver_units"),
        ("warehouse/silver.20260101/turns.parquet", "legacy_generations"),
        ("exports/20260101-abc/sft/train.parquet", "exports"),
        ("exports/LATEST", "latest"),
        (".turnlake/release-parts/k/meta.json", "release_parts"),
        (".turnlake/release-stage/sft/x.parquet", "release_stage"),
        (".turnlake/trainability/memo.json", "legacy_trainability_memo"),
        (".turnlake/report/a.svg", "report_cache"),
        (".turnlake/validated/c.json", "legacy_passes"),
        (".turnlake/last_build.json", "last_build"),
        (".turnlake/pseudonym.key", "generated_pseudonym_key"),
        ("reports/latest.html", "reports"),
        ("privacy/tombstones.jsonl", "tombstones"),
        ("raw/study/p1/session.json", "raw"),
        ("warehouse.duckdb", "duckdb"),
        (".turnlake.lease", "lease_file"),
    ],
)
def test_a_file_belongs_to_the_holder_of_its_nearest_folder(tmp_path, relative, attr):
    holder = holder_of(Layout(tmp_path), tmp_path / relative)
    assert holder is not None and holder.attr == attr


def test_a_file_no_holder_contains_belongs_to_none(tmp_path):
    assert holder_of(Layout(tmp_path), tmp_path / "scratch" / "notes.txt") is None


def test_forget_deletes_the_caches_and_memos_whole_and_keeps_the_rest(tmp_path):
    deleted = [  # caches and memos: rebuilt by the next build
        "warehouse/tables/silver_units/study.turns/a.parquet",
        "warehouse/silver/turns.parquet",  # a table of the layout before Delta
        "warehouse/bronze/_ingest/study.parquet",  # an ingest log of the layout before Delta
        ".turnlake/release-parts/k/meta.json",
        ".turnlake/release-stage/sft/x.parquet",
        ".turnlake/trainability/memo.json",
        ".turnlake/report/a.svg",
        ".turnlake/report/page.html",
        ".turnlake/last_build.json",
        ".turnlake/validated/c.json",  # contract passes an older version kept
    ]
    kept = [  # rewritten by other steps of forget, or holding no subject data
        "warehouse/bronze/_ingest/study/_delta_log/0.json",
        "warehouse/tables/silver/turns/a.parquet",
        "exports/LATEST",
        ".turnlake/pseudonym.key",
        "reports/latest.html",
        "privacy/tombstones.jsonl",
        "warehouse.duckdb",
    ]
    for relative in deleted + kept:
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text("x")
    delete_caches(Layout(tmp_path))
    assert [r for r in deleted if (tmp_path / r).exists()] == []
    assert [r for r in kept if not (tmp_path / r).exists()] == []


def test_the_downloaded_copies_of_releases_are_deleted(tmp_path, monkeypatch):
    monkeypatch.setenv("TURNLAKE_CACHE_DIR", str(tmp_path / "cache"))
    copy = Layout(tmp_path / "data").downloaded_release("v1") / "sft" / "train.parquet"
    assert copy.is_relative_to(tmp_path / "cache")  # a folder of this machine, not the root's
    copy.parent.mkdir(parents=True)
    copy.write_text("rows")
    delete_caches(Layout(tmp_path / "data"))
    assert not copy.exists()


def test_the_privacy_page_documents_every_holder_with_what_forget_does():
    page = (Path(__file__).parents[2] / "docs" / "concepts" / "privacy.md").read_text()
    rows = {
        cells[1].strip("` "): cells[3].strip()
        for line in page.splitlines()
        if line.startswith("| ") and len(cells := line.strip("|").split(" | ")) == 4
    }
    for h in HOLDERS:
        assert rows.get(h.attr, "").startswith(f"**{h.forget.name.lower()}**"), h.attr
