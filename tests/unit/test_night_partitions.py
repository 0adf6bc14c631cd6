"""A night's small change transforms only the partitions it lands in (pipelines/transforms/plan.py):
a line appended to a long JSONL file leaves the units of its old lines fresh, and a new prompt that
near-duplicates old ones lands in the night's own partition; both end with what a build from
scratch publishes."""

import shutil
from pathlib import Path

import orjson
import polars as pl

from pipelines.config.names import SOURCES
from pipelines.config.settings import settings_from_config
from pipelines.ingest.incremental import ingest_source
from pipelines.partitions.store import MAP_TABLE
from pipelines.release.store.files import read_manifest
from pipelines.schemas.silver import SILVER_MODELS
from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout
from pipelines.transforms.plan import plan_silver
from pipelines.transforms.refresh import refresh_silver
from tests.conformance.harness import run_pipeline

KEY = "0123456789abcdef0123456789abcdef"
SHARDED = "[partitions]\nshards = 4\n"
TOPICS = (
    "tides",
    "volcanoes",
    "glaciers",
    "comets",
    "deserts",
    "coral reefs",
    "monsoons",
    "auroras",
)


def _conversation(cid: str, prompt: str) -> bytes:
    turns = [{"role": "student", "content": prompt}, {"role": "tutor", "content": "Good question."}]
    return orjson.dumps({"conversation_id": cid, "turns": turns}) + b"\n"


def _long_file(raw: Path) -> Path:
    """One JSONL file of 8 conversations, each its own split group (no rater links them), each
    asking about another topic (no near-duplicates)."""
    path = raw / "dialogues" / "tutoring" / "all.jsonl"
    path.parent.mkdir(parents=True)
    lines = [
        _conversation(f"tut-{i:03d}", f"Please explain how {topic} form, step by step {i}.")
        for i, topic in enumerate(TOPICS)
    ]
    path.write_bytes(b"".join(lines))
    return path


def _silver_built(raw: Path, data: Path):
    """Settings of `data` after ingest and silver of `raw` (4 slices per landing batch)."""
    data.mkdir(parents=True, exist_ok=True)
    (data / "turnlake.toml").write_text(SHARDED)
    settings = settings_from_config(raw, data, data / "turnlake.toml")
    for source in SOURCES:
        ingest_source(source, settings, "test")
    refresh_silver(settings, "test")
    return settings


def _ingested(settings) -> None:
    for source in SOURCES:
        ingest_source(source, settings, "test")


def _silver(data: Path) -> dict[str, pl.DataFrame]:
    out = {}
    for table in SILVER_MODELS:
        frame = stored.read(Layout(data), "silver", table)
        if table == "quarantine":  # names the run that read the record: another data root
            frame = frame.drop("run_id")
        out[table] = frame.sort(frame.columns, nulls_last=True)
    return out


def test_a_line_appended_to_a_long_file_makes_only_the_nights_partition_stale(tmp_path):
    """8 conversations in one file spread over the 4 slices of batch 0; one more appended to the
    same file is a new group of batch 1: exactly 1 partition is stale (keyed on the file's id,
    all 4 old ones were), and silver then equals a build from scratch."""
    raw = tmp_path / "raw"
    path = _long_file(raw)
    settings = _silver_built(raw, tmp_path / "data")
    before = set(stored.read(Layout(settings.data_root), "silver", MAP_TABLE)["_partition"])
    assert len(before) == 4 and all(p.startswith("b00000-") for p in before)
    with open(path, "ab") as out:
        out.write(_conversation("tut-900", "Why do rainbows appear after a storm?"))
    _ingested(settings)
    stale = plan_silver(settings).stale
    assert len(stale) == 1 and stale[0].startswith("b00001-")
    refresh_silver(settings, "test")
    scratch = _silver_built(raw, tmp_path / "scratch")
    got, fresh = _silver(settings.data_root), _silver(scratch.data_root)
    for table in SILVER_MODELS:
        assert got[table].equals(fresh[table]), table


def test_a_new_near_duplicate_prompt_lands_in_the_nights_partition(tmp_path, monkeypatch):
    """8 conversations ask near-duplicates of one question (one prompt cluster, 8 split groups):
    they spread over the slices of batch 0 by bucket, not into one partition. A new file's
    near-duplicate, named to sort first (so the cluster's split group is renamed after it and the
    old groups' split may move), is 1 stale partition of batch 1; the release equals a build from
    scratch (its partitions are keyed on their groups' splits, release/build/datasets.py)."""
    monkeypatch.setenv("TURNLAKE_PSEUDONYM_KEY", KEY)
    raw = tmp_path / "raw"
    folder = raw / "dialogues" / "tutoring"
    folder.mkdir(parents=True)
    asks = [
        _conversation(f"tut-1{i:02d}", f"What is the capital of France, {n}?")
        for i, n in enumerate(("Ana", "Ben", "Cy", "Dee", "Eli", "Fay", "Gus", "Hal"))
    ]
    (folder / "day-1.jsonl").write_bytes(b"".join(asks))
    data = tmp_path / "data"
    run_pipeline(raw, data, config=SHARDED)
    layout = Layout(data)
    placed = stored.read(layout, "silver", MAP_TABLE)
    assert placed.height == 8 and placed["_partition"].n_unique() > 1  # by bucket, not one
    near = stored.read(layout, "silver", "_near_duplicates")
    assert near.height == 8 and near["dedup_cluster"].n_unique() == 1
    (folder / "day-2.jsonl").write_bytes(
        _conversation("tut-000", "What is the capital of France, Ida?")
    )
    settings = settings_from_config(raw, data, data / "turnlake.toml")
    _ingested(settings)
    stale = plan_silver(settings).stale
    assert len(stale) == 1 and stale[0].startswith("b00001-")
    built = run_pipeline(raw, data, config=SHARDED)
    scratch = run_pipeline(raw, tmp_path / "scratch", config=SHARDED)
    hashes = [read_manifest(b.release)["content_hash"] for b in (built, scratch)]
    assert hashes[0] == hashes[1]
    got, fresh = _silver(data), _silver(tmp_path / "scratch")
    for table in SILVER_MODELS:
        assert got[table].equals(fresh[table]), table
    shutil.rmtree(tmp_path / "scratch")
