"""Run settings: where data lives and the limits/conventions adapters apply.

Everything has an embedded default; environment variables override them so that the CLI,
`dg launch` and `dg dev` all see the same roots.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

SOURCES: tuple[str, ...] = ("scenario", "study", "social_rl", "dialogue", "decision")


@dataclass(frozen=True)
class Limits:
    """Bounds that keep memory flat on hostile input; exceeding one quarantines as `too_large`."""

    max_record_bytes: int = 16 * 1024 * 1024
    max_file_bytes: int = 512 * 1024 * 1024
    max_nesting_depth: int = 64
    max_decompressed_bytes: int = 8 * 1024 * 1024
    raw_excerpt_chars: int = 2000


@dataclass(frozen=True)
class Settings:
    raw_root: Path = Path("data/raw")
    data_root: Path = Path("data")
    limits: Limits = field(default_factory=Limits)
    # Naive source timestamps are read in this zone, per source (default UTC).
    source_timezones: dict[str, str] = field(default_factory=dict)
    # Base of `turn_index` in dialogue feedback events, per dataset (first folder under feedback/).
    dialogue_turn_index_base: dict[str, int] = field(default_factory=dict)
    default_turn_index_base: int = 0
    config_path: Path | None = None
    # A raw file that vanished keeps its rows (reported as missing) unless this is set.
    remove_deleted_files: bool = False
    # Raw files parsed into one bronze part per table: bounds ingest memory and the number of parts.
    ingest_batch_files: int = 2000
    ingest_batch_bytes: int = 64 * 1024 * 1024
    ingest_workers: int = 0  # processes parsing batches / redacting release texts; 0 = one per CPU core
    # Re-read and hash raw files whose size and modification time are unchanged (default: trust them).
    ingest_rehash_unchanged: bool = False
    # Nightly build: cron expression and the zone it is read in.
    schedule_cron: str = "0 2 * * *"
    schedule_timezone: str = "UTC"
    # turnlake.toml [splits] as written; `splits` parses it.
    splits_table: dict = field(default_factory=dict)
    # Scale of decision `outcome.rating` per dataset (first folder under decisions/): "0-1" or "1-5".
    # A dataset without an entry has its scale settled by evidence (DESIGN §3).
    decision_rating_scale: dict[str, str] = field(default_factory=dict)
    # Release semantics (turnlake.toml [release]): KTO rows with reward exactly 0 are left out unless
    # this is set; SFT examples whose final turn has a negative reward are left out unless this is set.
    release_kto_include_neutral: bool = False
    release_sft_include_negative: bool = False

    @property
    def splits(self):  # -> pipelines.splits.SplitConfig (imported here: splits imports this module)
        from pipelines.splits import split_config_from

        return split_config_from(self.splits_table)

    def timezone_for(self, source: str) -> str:
        return self.source_timezones.get(source, "UTC")

    def rating_scale_for(self, dataset: str) -> str | None:
        return self.decision_rating_scale.get(dataset)

    def turn_index_base_for(self, dataset: str) -> int:
        return self.dialogue_turn_index_base.get(dataset, self.default_turn_index_base)

    @property
    def warehouse_dir(self) -> Path:
        return self.data_root / "warehouse"

    @property
    def duckdb_path(self) -> Path:
        return self.data_root / "warehouse.duckdb"

    @property
    def exports_dir(self) -> Path:
        return self.data_root / "exports"

    def with_roots(self, raw_root: Path | str | None = None, data_root: Path | str | None = None) -> Settings:
        return replace(
            self,
            raw_root=Path(raw_root) if raw_root is not None else self.raw_root,
            data_root=Path(data_root) if data_root is not None else self.data_root,
        )


def load_config_file(path: Path | None) -> dict:
    """Per-dataset conventions from `turnlake.toml` (see the file shipped at the project root)."""
    if path is None or not path.exists():
        return {}
    with path.open("rb") as fh:
        return tomllib.load(fh)


def config_path_from_env(environ: Mapping[str, str] | None = None) -> Path | None:
    env = os.environ if environ is None else environ
    if "TURNLAKE_CONFIG" in env:
        return Path(env["TURNLAKE_CONFIG"])
    default = Path("turnlake.toml")
    return default if default.exists() else None


def settings_from_config(raw_root: Path, data_root: Path, config_path: Path | None) -> Settings:
    config = load_config_file(config_path)
    limits = Limits(**config.get("limits", {}))
    return Settings(
        raw_root=raw_root,
        data_root=data_root,
        config_path=config_path,
        limits=limits,
        source_timezones=dict(config.get("timezones", {})),
        remove_deleted_files=bool(config.get("ingest", {}).get("remove_deleted_files", False)),
        ingest_batch_files=int(config.get("ingest", {}).get("batch_files", Settings.ingest_batch_files)),
        ingest_batch_bytes=int(config.get("ingest", {}).get("batch_mb", 64)) * 1024 * 1024,
        ingest_workers=int(config.get("ingest", {}).get("workers", 0)),
        ingest_rehash_unchanged=bool(config.get("ingest", {}).get("rehash_unchanged", False)),
        schedule_cron=config.get("schedule", {}).get("cron", Settings.schedule_cron),
        schedule_timezone=config.get("schedule", {}).get("timezone", Settings.schedule_timezone),
        splits_table=dict(config.get("splits", {})),
        dialogue_turn_index_base={k: int(v) for k, v in config.get("dialogue", {}).get("turn_index_base", {}).items()},
        decision_rating_scale={k: str(v) for k, v in config.get("decision", {}).get("rating_scale", {}).items()},
        release_kto_include_neutral=bool(config.get("release", {}).get("kto_include_neutral", False)),
        release_sft_include_negative=bool(config.get("release", {}).get("sft_include_negative", False)),
    )


def settings_from_env(environ: Mapping[str, str] | None = None) -> Settings:
    """Settings with `TURNLAKE_RAW_ROOT` / `TURNLAKE_DATA_ROOT` / `TURNLAKE_CONFIG` applied."""
    env = os.environ if environ is None else environ
    data_root = Path(env.get("TURNLAKE_DATA_ROOT", "data"))
    raw_root = Path(env.get("TURNLAKE_RAW_ROOT", str(data_root / "raw")))
    return settings_from_config(raw_root, data_root, config_path_from_env(env))
