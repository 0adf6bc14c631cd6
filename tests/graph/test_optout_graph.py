"""Opt-out honoured end to end: an opted-out participant reaches neither silver, gold nor a
release."""

from pathlib import Path

import polars as pl

from pipelines.config.settings import Settings
from pipelines.reports.summary import build_summary
from pipelines.schemas.gold import GOLD_MODELS
from pipelines.schemas.silver import SILVER_MODELS
from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout
from tests.graph.test_build_graph import clean_materialized, failed_checks, materialize_all


def _all_parquet_text(root: Path) -> str:
    texts = []
    for path in root.rglob("*.parquet"):
        frame = pl.read_parquet(path)
        texts.append(frame.write_ndjson())
    return "\n".join(texts)


def test_opted_out_participant_is_withheld_from_silver_gold_and_release(tmp_path, built_once):
    raw, data = clean_materialized(built_once, tmp_path / "built")
    layout = Layout(data)
    participant = (
        stored.read(layout, "silver", "episodes")
        .filter(pl.col("source") == "study")["group_id"]
        .sort()[0]
    )
    (raw / "consent").mkdir()
    (raw / "consent" / "optouts.jsonl").write_text(
        f'{{"subject_kind": "participant", "subject_id": "{participant}", "opted_out_at": '
        '"2026-11-01T00:00:00Z"}\n'
    )
    result = materialize_all(raw, data)
    assert result.success and failed_checks(result) == []

    latest = layout.exports / (layout.exports / "LATEST").read_text().strip()
    current = [
        Path(f)
        for layer, names in (("silver", SILVER_MODELS), ("gold", GOLD_MODELS))
        for t in names
        for f in stored.files(layout, layer, t)
    ]
    assert participant not in "\n".join(pl.read_parquet(f).write_ndjson() for f in current)
    assert participant not in _all_parquet_text(latest)
    withheld = build_summary(Settings(raw_root=raw, data_root=data)).withheld
    assert withheld["episodes"] >= 1 and withheld["turns"] >= 1
