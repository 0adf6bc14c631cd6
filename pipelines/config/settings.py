"""Run settings: where data lives and the limits/conventions every step applies.

turnlake.toml is read once per file version, validated against `pipelines.config.schema` (an
unknown table or key, or a bad value, raises `SettingsError` naming the file, the key and what is
allowed) and turned into one typed `Settings`. Nothing else reads the file. Environment variables
`TURNLAKE_RAW_ROOT` / `TURNLAKE_DATA_ROOT` / `TURNLAKE_CONFIG` choose the roots and the file, so the
CLI, `dg launch` and `dg dev` all see the same settings.
"""

from __future__ import annotations

import functools
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from pipelines.config import schema
from pipelines.config.problems import problems
from pipelines.config.redaction import RedactionConfig
from pipelines.config.splits import NearDuplicates, SplitConfig
from pipelines.storage.layout import Layout
from pipelines.storage.uri import as_root

_D = schema.DEFAULTS


class SettingsError(ValueError):
    """A settings file holds an unknown table or key, or a value that is not allowed."""

    def __init__(self, where: str | Path, problems: list[str]):
        self.where = str(where)
        self.problems = problems
        lines = "\n".join(f"  {p}" for p in problems)
        super().__init__(f"invalid settings in {where}:\n{lines}")


@dataclass(frozen=True)
class Limits:
    """Bounds that keep memory flat on hostile input; exceeding one quarantines as `too_large`."""

    max_record_bytes: int = _D.limits.max_record_bytes
    max_file_bytes: int = _D.limits.max_file_bytes
    max_nesting_depth: int = _D.limits.max_nesting_depth
    max_decompressed_bytes: int = _D.limits.max_decompressed_bytes
    raw_excerpt_chars: int = _D.limits.raw_excerpt_chars


@dataclass(frozen=True)
class PrivacySettings:
    """`[privacy]`: surveys in releases, where the pseudonym key is, what released text loses."""

    include_surveys: bool = _D.privacy.include_surveys
    pseudonym_key_file: str | None = _D.privacy.pseudonym_key_file
    # An S3 data root without a configured key: generate one beside the data (privacy/key.py).
    generate_key_on_s3: bool = _D.privacy.generate_key_on_s3
    redaction: RedactionConfig = field(default_factory=RedactionConfig)

    def record(self) -> dict[str, Any]:
        """As JSON-able values in a stable order (for manifests and digests)."""
        r = self.redaction
        return {
            "include_surveys": self.include_surveys,
            "pseudonym_key_file": self.pseudonym_key_file,
            "redaction": {
                "org_names": list(r.org_names),
                "phone_regions": list(r.phone_regions),
                "kinds": sorted(r.kinds),
            },
        }


@dataclass(frozen=True)
class Settings:
    raw_root: Path = Path("data/raw")
    data_root: Path = Path("data")
    limits: Limits = field(default_factory=Limits)
    # Naive source timestamps are read in this zone, per source (default UTC).
    source_timezones: dict[str, str] = field(default_factory=dict)
    # Base of `turn_index` in dialogue feedback events, per dataset (first folder under feedback/).
    dialogue_turn_index_base: dict[str, int] = field(default_factory=dict)
    config_path: Path | None = None
    # A raw file that vanished keeps its rows (reported as missing) unless this is set.
    remove_deleted_files: bool = _D.ingest.remove_deleted_files
    # Raw files parsed into one bronze part per table: bounds ingest memory and the number of parts.
    ingest_batch_files: int = _D.ingest.batch_files
    ingest_batch_bytes: int = _D.ingest.batch_mb * 1024 * 1024
    ingest_workers: int = (
        _D.ingest.workers
    )  # processes parsing batches / redacting release texts; 0 = one per core
    # Re-read and hash raw files whose size and modification time are unchanged (default: trust
    # them).
    ingest_rehash_unchanged: bool = _D.ingest.rehash_unchanged
    # Nightly build: cron expression and the zone it is read in.
    schedule_cron: str = _D.schedule.cron
    schedule_timezone: str = _D.schedule.timezone
    # Split assignment (`[splits]`: salt, ratios, link_raters).
    splits: SplitConfig = field(default_factory=SplitConfig)
    # Silver/gold partitions per landing batch (`[partitions] shards`, DESIGN §8).
    partition_shards: int | str = _D.partitions.shards
    # With `shards = "auto"`: episodes per partition a landing batch is sized by.
    partition_episodes: int = _D.partitions.episodes_per_partition
    # Days of table history (Delta versions, snapshot records) kept for as-of releases
    # (`[retention] keep_days`); versions a kept release names are never removed.
    retention_keep_days: int = _D.retention.keep_days
    # Scale of decision `outcome.rating` per dataset (first folder under decisions/): "0-1" or
    # "1-5". A dataset without an entry has its scale settled by evidence (DESIGN §3).
    decision_rating_scale: dict[str, str] = field(default_factory=dict)
    # Release semantics (turnlake.toml [release]): KTO rows with reward exactly 0 are left out
    # unless this is set; SFT examples whose final turn has a negative reward are left out unless
    # this is set.
    release_kto_include_neutral: bool = _D.release.kto_include_neutral
    release_sft_include_negative: bool = _D.release.sft_include_negative
    # `[release] min_raters` / `min_label_agreement`: what a rater-combined reward needs to be
    # released (None: no minimum).
    release_min_raters: int | None = _D.release.min_raters
    release_min_label_agreement: float | None = _D.release.min_label_agreement
    # `[release] store`: a folder or s3://bucket/prefix releases are published to (None: none).
    release_store: str | None = _D.release.store
    # `[release] minari`: the Minari datasets in every release (else `turnlake export minari`).
    release_minari: bool = _D.release.minari
    # `[release.card]` (card metadata, warning thresholds) and `[release.profiles.<name>]`.
    release_card: schema.Card = field(default_factory=schema.Card)
    release_profiles: dict[str, schema.Profile] = field(default_factory=dict)
    # `[release] decontaminate` as written (paths relative to turnlake.toml) and its parameters.
    release_decontaminate: tuple[str, ...] = ()
    release_decontamination: schema.Decontamination = field(default_factory=schema.Decontamination)
    privacy: PrivacySettings = field(default_factory=PrivacySettings)
    # How long an asset waits for another writer of the data root before it fails (`[lock]`).
    lock_wait_seconds: float = _D.lock.wait_seconds
    # `[oasst]`: OpenAssistant messages that become turns (deleted / unreviewed / synthetic: not by
    # default, as OASST's own exporter).
    oasst: schema.Oasst = field(default_factory=schema.Oasst)

    def release_shape(self) -> dict[str, Any]:
        """`[release.card]` and `[release.profiles]` as JSON-able values (manifest, digests)."""
        return {
            "card": self.release_card.model_dump(),
            "profiles": {n: p.model_dump() for n, p in sorted(self.release_profiles.items())},
        }

    def timezone_for(self, source: str) -> str:
        return self.source_timezones.get(source, "UTC")

    def rating_scale_for(self, dataset: str) -> str | None:
        return self.decision_rating_scale.get(dataset)

    @property
    def layout(self) -> Layout:
        """Where every file lives under the data root."""
        return Layout(self.data_root)

    def with_roots(
        self, raw_root: Path | str | None = None, data_root: Path | str | None = None
    ) -> Settings:
        return replace(
            self,
            raw_root=as_root(raw_root) if raw_root is not None else self.raw_root,
            data_root=as_root(data_root) if data_root is not None else self.data_root,
        )


def validate_config(
    config: Mapping[str, Any], where: str | Path = "turnlake.toml"
) -> schema.TurnlakeFile:
    """A parsed turnlake.toml as its typed model; `SettingsError` lists every problem in it."""
    data = dict(config)
    try:
        return schema.TurnlakeFile.model_validate(data)
    except ValidationError as err:
        raise SettingsError(where, problems(err, data)) from None


def read_config_file(path: Path | None) -> schema.TurnlakeFile:
    """turnlake.toml at `path` (None: no file, every default), parsed and validated."""
    if path is None:
        return schema.DEFAULTS
    path = Path(path)
    try:
        stat = path.stat()
    except OSError as err:
        raise SettingsError(
            path, [f"cannot read the settings file: {err.strerror or err}"]
        ) from None
    return _read_config_file(path.resolve(), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=16)
def _read_config_file(path: Path, mtime_ns: int, size: int) -> schema.TurnlakeFile:
    # Keyed by modification time and size: read once per version of the file, in every process.
    try:
        with path.open("rb") as fh:
            parsed = tomllib.load(fh)
    except tomllib.TOMLDecodeError as err:
        raise SettingsError(path, [f"not valid TOML: {err}"]) from None
    except OSError as err:  # a folder, no permission
        raise SettingsError(
            path, [f"cannot read the settings file: {err.strerror or err}"]
        ) from None
    return validate_config(parsed, path)


def config_path_from_env(environ: Mapping[str, str] | None = None) -> Path | None:
    env = os.environ if environ is None else environ
    if "TURNLAKE_CONFIG" in env:
        return Path(env["TURNLAKE_CONFIG"])
    default = Path("turnlake.toml")
    return default if default.exists() else None


def split_config_of(splits: schema.Splits) -> SplitConfig:
    """`[splits]` as the split assignment uses it (no `[splits.ratios]`: train 0.8, test 0.2)."""
    near = NearDuplicates(**splits.near_duplicates.model_dump())
    if splits.ratios is None:
        return SplitConfig(salt=splits.salt, link_raters=splits.link_raters, near_duplicates=near)
    return SplitConfig(
        salt=splits.salt,
        ratios=splits.ratios.given(),
        link_raters=splits.link_raters,
        near_duplicates=near,
    )


def settings_from_model(
    raw_root: Path, data_root: Path, config_path: Path | None, file: schema.TurnlakeFile
) -> Settings:
    """The typed settings a validated turnlake.toml gives for these roots."""
    redaction = file.privacy.redaction
    return Settings(
        raw_root=raw_root,
        data_root=data_root,
        config_path=config_path,
        limits=Limits(**file.limits.model_dump()),
        source_timezones={s: z for s, z in file.timezones.model_dump().items() if z is not None},
        remove_deleted_files=file.ingest.remove_deleted_files,
        ingest_batch_files=file.ingest.batch_files,
        ingest_batch_bytes=file.ingest.batch_mb * 1024 * 1024,
        ingest_workers=file.ingest.workers,
        ingest_rehash_unchanged=file.ingest.rehash_unchanged,
        schedule_cron=file.schedule.cron,
        schedule_timezone=file.schedule.timezone,
        splits=split_config_of(file.splits),
        partition_shards=file.partitions.shards,
        partition_episodes=file.partitions.episodes_per_partition,
        retention_keep_days=file.retention.keep_days,
        dialogue_turn_index_base=dict(file.dialogue.turn_index_base),
        decision_rating_scale=dict(file.decision.rating_scale),
        release_kto_include_neutral=file.release.kto_include_neutral,
        release_sft_include_negative=file.release.sft_include_negative,
        release_min_raters=file.release.min_raters,
        release_min_label_agreement=file.release.min_label_agreement,
        release_store=file.release.store,
        release_minari=file.release.minari,
        release_card=file.release.card,
        release_profiles=dict(file.release.profiles),
        release_decontaminate=tuple(file.release.decontaminate),
        release_decontamination=file.release.decontamination,
        lock_wait_seconds=file.lock.wait_seconds,
        privacy=PrivacySettings(
            include_surveys=file.privacy.include_surveys,
            pseudonym_key_file=file.privacy.pseudonym_key_file,
            generate_key_on_s3=file.privacy.generate_key_on_s3,
            redaction=RedactionConfig(
                list(redaction.org_names), list(redaction.phone_regions), frozenset(redaction.kinds)
            ),
        ),
        oasst=file.oasst,
    )


def settings_from_config(raw_root: Path, data_root: Path, config_path: Path | None) -> Settings:
    """Settings from the turnlake.toml at `config_path` (validated; None: every default)."""
    return settings_from_model(raw_root, data_root, config_path, read_config_file(config_path))


def settings_from_env(environ: Mapping[str, str] | None = None) -> Settings:
    """Settings with `TURNLAKE_RAW_ROOT` / `TURNLAKE_DATA_ROOT` / `TURNLAKE_CONFIG` applied."""
    env = os.environ if environ is None else environ
    data_root = as_root(env.get("TURNLAKE_DATA_ROOT", "data"))
    raw_root = as_root(env.get("TURNLAKE_RAW_ROOT", str(Layout(data_root).raw)))
    return settings_from_config(raw_root, data_root, config_path_from_env(env))
