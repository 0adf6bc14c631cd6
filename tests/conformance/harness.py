"""Run the whole pipeline in-process, without Dagster, on a tiny hand-written raw root.

The semantic conformance suite writes a few raw records by hand, runs ingest → silver → gold →
splits → release through the same functions the assets call, and compares what comes out with a
value computed by hand in the test. Each step is the production code path; only the orchestration
(Dagster) and the blocking checks' bookkeeping are left out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from pipelines.config.names import SOURCES
from pipelines.config.settings import Settings, settings_from_config
from pipelines.gold.params import load_params
from pipelines.gold.refresh import refresh_gold
from pipelines.ingest.incremental import ingest_source
from pipelines.release.assemble import make_release
from pipelines.release.store.files import latest_release
from pipelines.schemas.gold import GOLD_MODELS
from pipelines.schemas.silver import SILVER_MODELS
from pipelines.splits.assign import refresh_splits
from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout
from pipelines.transforms.refresh import refresh_silver

PROJECT = Path(__file__).resolve().parents[2]
# One split for every group unless a test asks otherwise: hand-computed expectations then need no
# knowledge of the salt's bucket arithmetic.
ALL_TRAIN = '[splits]\nsalt = "conformance"\n[splits.ratios]\ntrain = 1.0\n'


@dataclass
class Built:
    settings: Settings
    silver: dict[str, pl.DataFrame]
    gold: dict[str, pl.DataFrame]
    release: Path | None
    datasets: dict[str, pl.DataFrame] = field(
        default_factory=dict
    )  # every split of each released dataset


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def write_json(path: Path, record: dict | list) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2))
    return path


def run_pipeline(
    raw_root: Path,
    data_root: Path,
    *,
    config: str = ALL_TRAIN,
    rewards: dict | None = None,
    release: bool = True,
) -> Built:
    """ingest → silver → gold → splits (→ release) on `raw_root`, written under `data_root`.

    `config` is the text of a turnlake.toml; `rewards` overrides keys of the shipped
    rewards.toml."""
    data_root.mkdir(parents=True, exist_ok=True)
    config_path = data_root / "turnlake.toml"
    config_path.write_text(config)
    settings = settings_from_config(raw_root, data_root, config_path)
    layout = Layout(data_root)
    for source in SOURCES:
        ingest_source(source, settings, "conformance")
    refresh_silver(settings, "conformance")
    refresh_gold(layout, load_params(PROJECT / "rewards.toml", rewards), "conformance")
    refresh_splits(layout, settings.splits, "conformance")
    silver = {
        t: stored.read(layout, "silver", t)
        for t in SILVER_MODELS
        if stored.exists(layout, "silver", t)
    }
    gold = {
        t: stored.read(layout, "gold", t) for t in GOLD_MODELS if stored.exists(layout, "gold", t)
    }
    built = Built(settings, silver, gold, None)
    if release:
        make_release(settings, today="20260101")
        version = latest_release(layout.exports)
        if version is not None:
            built.release = layout.exports / version
            built.datasets = released_datasets(built.release)
    return built


def released_datasets(release: Path) -> dict[str, pl.DataFrame]:
    """Each dataset folder of a release as one frame (all splits, the `split` column kept)."""
    out = {}
    for folder in sorted(p for p in release.iterdir() if p.is_dir()):
        files = sorted(folder.glob("*.parquet"))
        if files:
            out[folder.name] = pl.concat(
                [pl.read_parquet(f) for f in files], how="diagonal_relaxed"
            )
    return out
