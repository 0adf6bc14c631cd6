"""What to redact in released text: the kinds of span (`KINDS`), the phone regions, and the
configured organization names, read from `[privacy.redaction]` and checked when built."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import phonenumbers

# In priority order: of two spans with the same start and length, the earlier kind's is kept (a
# card number's digits may also read as a phone).
KINDS: tuple[str, ...] = (
    "url",
    "token",
    "email",
    "card",
    "iban",
    "national_id",
    "ip",
    "phone",
    "money",
    "address",
    "person",
    "known_name",
    "org",
)
# Found from an episode's rows (pipelines/privacy/known_names.py), not by the Redactor in a text
# alone: the Redactor's detectors are the others.
EPISODE_KINDS: tuple[str, ...] = ("known_name",)
TEXT_KINDS: tuple[str, ...] = tuple(k for k in KINDS if k not in EPISODE_KINDS)
DEFAULT_PHONE_REGIONS: tuple[str, ...] = ("US", "GB", "DE", "FR")


@dataclass(frozen=True)
class RedactionConfig:
    """What to redact. `kinds` are the enabled kinds (default: all of `KINDS`)."""

    org_names: list[str] = field(default_factory=list)
    phone_regions: list[str] = field(default_factory=lambda: list(DEFAULT_PHONE_REGIONS))
    kinds: frozenset[str] = frozenset(KINDS)

    def __post_init__(self) -> None:
        unknown = set(self.kinds) - set(KINDS)
        if unknown:
            raise ValueError(f"unknown redaction kinds {sorted(unknown)}; known: {list(KINDS)}")
        bad = [r for r in self.phone_regions if r not in phonenumbers.SUPPORTED_REGIONS]
        if bad:
            raise ValueError(f"unknown phone regions {bad} (ISO 3166 alpha-2 codes such as US, GB)")


def redaction_config_from(config: Mapping[str, Any]) -> RedactionConfig:
    """`RedactionConfig` from a parsed turnlake.toml: table `[privacy.redaction]` with optional
    keys `org_names` (list of names), `phone_regions` (list of region codes) and `kinds` (enabled
    kinds)."""
    section = (config.get("privacy") or {}).get("redaction") or {}
    if not isinstance(section, Mapping):
        raise ValueError("[privacy.redaction] must be a table")  # noqa: TRY004 - a config error, like the others
    kwargs: dict[str, Any] = {}
    if "org_names" in section:
        kwargs["org_names"] = [str(n) for n in _as_list(section["org_names"], "org_names")]
    if "phone_regions" in section:
        kwargs["phone_regions"] = [
            str(r).upper() for r in _as_list(section["phone_regions"], "phone_regions")
        ]
    if "kinds" in section:
        kwargs["kinds"] = frozenset(str(k).lower() for k in _as_list(section["kinds"], "kinds"))
    return RedactionConfig(**kwargs)


def _as_list(value: Any, key: str) -> list:
    if not isinstance(value, list):
        raise ValueError(f"[privacy.redaction] {key} must be a list")  # noqa: TRY004 - a config error
    return value
