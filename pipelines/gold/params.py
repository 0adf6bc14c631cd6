"""Gold parameters: `rewards.toml` at the project root, deep-merged with per-run overrides."""

from __future__ import annotations

import copy
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

REWARDS_FILE = Path(__file__).resolve().parents[2] / "rewards.toml"
PARAMS_MARKER = "_params.json"  # the parameters a gold generation was built with, stored beside it


def rewards_path() -> Path:
    """`TURNLAKE_REWARDS` when set (tests, other deployments), else the shipped rewards.toml."""
    return Path(os.environ.get("TURNLAKE_REWARDS", REWARDS_FILE))


def load_params(path: Path | None = None, overrides: Mapping[str, Any] | str | None = None) -> dict[str, Any]:
    """The shipped defaults with `overrides` (a dict, or JSON / TOML text) merged over them."""
    with (path or rewards_path()).open("rb") as fh:
        params = tomllib.load(fh)
    return merge(params, parse_overrides(overrides))


def parse_overrides(overrides: Mapping[str, Any] | str | None) -> dict[str, Any]:
    if overrides is None:
        return {}
    if isinstance(overrides, Mapping):
        return dict(overrides)
    text = overrides.strip()
    if not text:
        return {}
    # JSON first (what run config usually carries); TOML for hand-written overrides.
    try:
        parsed = orjson.loads(text)
    except orjson.JSONDecodeError:
        parsed = tomllib.loads(text)
    if not isinstance(parsed, dict):
        raise TypeError("reward overrides must be an object / table")
    return parsed


def merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Tables merge key by key; any other value (lists included) is replaced whole."""
    out = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out
