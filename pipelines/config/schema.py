"""What turnlake.toml may hold: one Pydantic model per table, unknown keys forbidden, values typed.

`TurnlakeFile.model_validate(parsed_toml)` accepts exactly what the shipped turnlake.toml documents
(config/problems.py says what it rejects in the file's own words). Defaults live here once;
`pipelines.config.Settings` takes its defaults from `DEFAULTS`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import phonenumbers
from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveInt,
    model_validator,
)

from pipelines.config.cron import is_cron
from pipelines.config.redaction import DEFAULT_PHONE_REGIONS, KINDS
from pipelines.config.release import Card, Decontamination, MinHash, Profile, Release
from pipelines.config.splits import DEFAULT_SALT, SPLIT_ORDER
from pipelines.config.table import Table

__all__ = ["DEFAULTS", "Card", "Decontamination", "Profile", "Release", "Table", "TurnlakeFile"]

# A literal key in turnlake.toml would put the secret in a file that is copied around.
KEY_LITERALS = ("pseudonym_key", "key", "secret")


def _known_zone(name: str) -> str:
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f"unknown time zone {name!r}: use an IANA name such as 'UTC' or 'Europe/Berlin'"
        ) from None
    return name


def _cron(expression: str) -> str:
    if not is_cron(expression):
        raise ValueError(
            f"{expression!r} is not a cron expression: five fields 'minute hour day-of-month month "
            "day-of-week', e.g. '0 2 * * *' (02:00 every day)"
        )
    return expression


def _upper(value: Any) -> Any:
    return value.upper() if isinstance(value, str) else value


def _lower(value: Any) -> Any:
    return value.lower() if isinstance(value, str) else value


def _phone_region(region: str) -> str:
    if region not in phonenumbers.SUPPORTED_REGIONS:
        raise ValueError(
            f"unknown phone region {region!r}: use ISO 3166 alpha-2 codes such as US, GB"
        )
    return region


ZoneName = Annotated[str, AfterValidator(_known_zone)]
CronExpression = Annotated[str, AfterValidator(_cron)]
PhoneRegion = Annotated[str, BeforeValidator(_upper), AfterValidator(_phone_region)]
RedactionKind = Annotated[Literal[KINDS], BeforeValidator(_lower)]  # type: ignore[valid-type]


class Timezones(Table):
    """Source name = IANA zone in which that source's naive timestamps are read (default UTC)."""

    scenario: ZoneName | None = None
    study: ZoneName | None = None
    social_rl: ZoneName | None = None
    dialogue: ZoneName | None = None
    decision: ZoneName | None = None
    oasst: ZoneName | None = None


class Dialogue(Table):
    turn_index_base: dict[str, Literal[0, 1]] = Field(default_factory=dict)


class Decision(Table):
    rating_scale: dict[str, Literal["0-1", "1-5"]] = Field(default_factory=dict)


class Oasst(Table):
    """Which OpenAssistant messages become turns (as OASST's own exporter: all false by default).
    An excluded message takes its replies with it; bronze keeps every message."""

    include_deleted: bool = False
    include_unreviewed: bool = False  # review_result false (failed review) or absent (not reviewed)
    include_synthetic: bool = False


class Ingest(Table):
    remove_deleted_files: bool = False
    batch_files: PositiveInt = 2000
    batch_mb: PositiveInt = 64
    workers: NonNegativeInt = 0  # 0 = one per CPU core
    rehash_unchanged: bool = False


class Schedule(Table):
    cron: CronExpression = "0 2 * * *"
    timezone: ZoneName = "UTC"


class Ratios(Table):
    train: NonNegativeFloat | None = None
    validation: NonNegativeFloat | None = None
    test: NonNegativeFloat | None = None

    @model_validator(mode="after")
    def _sum_to_one(self) -> Ratios:
        given = self.given()
        if not given:
            raise ValueError(f"give at least one of {', '.join(SPLIT_ORDER)}")
        total = sum(given.values())
        if abs(total - 1.0) > 1e-9:
            terms = " + ".join(f"{k} {v:g}" for k, v in given.items())
            raise ValueError(f"ratios must sum to 1, got {total:g} ({terms})")
        return self

    def given(self) -> dict[str, float]:
        return {
            name: getattr(self, name) for name in SPLIT_ORDER if getattr(self, name) is not None
        }


class NearDuplicates(MinHash):
    """`[splits.near_duplicates]`: near-duplicate user prompts share a split
    (docs/concepts/near-duplicates.md)."""

    enabled: bool = True


class Splits(Table):
    salt: Annotated[str, Field(min_length=1)] = DEFAULT_SALT
    ratios: Ratios | None = None  # None: train 0.8, test 0.2
    link_raters: bool = True  # false: dialogue conversations are linked by participants, not raters
    near_duplicates: NearDuplicates = Field(default_factory=NearDuplicates)


def _not_whole(value: Any) -> Any:
    """`shards = 0` stored tables whole, a second code path now removed: refused by name, so an
    existing turnlake.toml does not silently change meaning."""
    if type(value) is int and value == 0:
        raise ValueError(
            "0 (tables stored whole) is no longer a layout: a whole table is now one partition; "
            "use `shards = 1` (one partition per landing batch)"
        )
    return value


class Partitions(Table):
    # 1-64 slices per landing batch, or "auto": each batch gets one slice per
    # `episodes_per_partition` episodes of its new groups
    shards: Annotated[
        Annotated[int, Field(ge=1, le=64)] | Literal["auto"], BeforeValidator(_not_whole)
    ] = "auto"
    # measured (docs/engine/partitions.md): about 44 k silver rows per partition
    episodes_per_partition: Annotated[int, Field(ge=1, le=100_000_000)] = 2_000


class Retention(Table):
    # Days silver / gold / splits history stays readable for as-of releases; versions a kept
    # release names are kept beyond it. 0 keeps only those and the current snapshot.
    keep_days: Annotated[int, Field(ge=0, le=36500)] = 7


class Lock(Table):
    wait_seconds: NonNegativeFloat = 600.0


class Limits(Table):
    max_record_bytes: PositiveInt = 16 * 1024 * 1024
    max_file_bytes: PositiveInt = 512 * 1024 * 1024
    max_nesting_depth: PositiveInt = 64
    max_decompressed_bytes: PositiveInt = 8 * 1024 * 1024
    raw_excerpt_chars: PositiveInt = 2000


class Redaction(Table):
    org_names: list[str] = Field(default_factory=list)
    phone_regions: list[PhoneRegion] = Field(default_factory=lambda: list(DEFAULT_PHONE_REGIONS))
    kinds: list[RedactionKind] = Field(default_factory=lambda: list(KINDS))


class Privacy(Table):
    include_surveys: bool = False
    pseudonym_key_file: str | None = None
    generate_key_on_s3: bool = False
    redaction: Redaction = Field(default_factory=Redaction)

    @model_validator(mode="before")
    @classmethod
    def _no_key_literal(cls, data: Any) -> Any:
        if isinstance(data, dict) and any(k in data for k in KEY_LITERALS):
            raise ValueError(
                "turnlake.toml must not hold the pseudonym key itself: set pseudonym_key_file to a "
                "file holding it, or the environment variable TURNLAKE_PSEUDONYM_KEY"
            )
        return data


class TurnlakeFile(Table):
    """The whole of turnlake.toml; every table optional."""

    timezones: Timezones = Field(default_factory=Timezones)
    dialogue: Dialogue = Field(default_factory=Dialogue)
    decision: Decision = Field(default_factory=Decision)
    ingest: Ingest = Field(default_factory=Ingest)
    schedule: Schedule = Field(default_factory=Schedule)
    splits: Splits = Field(default_factory=Splits)
    partitions: Partitions = Field(default_factory=Partitions)
    retention: Retention = Field(default_factory=Retention)
    limits: Limits = Field(default_factory=Limits)
    lock: Lock = Field(default_factory=Lock)
    release: Release = Field(default_factory=Release)
    privacy: Privacy = Field(default_factory=Privacy)
    oasst: Oasst = Field(default_factory=Oasst)


DEFAULTS = TurnlakeFile()
