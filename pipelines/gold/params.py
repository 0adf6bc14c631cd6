"""Gold parameters: `rewards.toml` at the project root, deep-merged with per-run overrides.

The shipped rewards.toml is also the schema of every rewards file and every override: a table or
key it does not hold is unknown, a value of another type than the shipped one is wrong (any number
may replace a number), and a few values are checked by rule (enabled rules must be registered, the
aggregation method known, the JSON-request pattern a valid regex). Any of these stops the build
with a `SettingsError` naming the file (or the run's overrides), the key and what is allowed.
"""

from __future__ import annotations

import copy
import functools
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson
import polars as pl

from pipelines.config.settings import SettingsError

REWARDS_FILE = Path(__file__).resolve().parents[2] / "rewards.toml"
PARAMS = "params"  # gold snapshot metadata: the parameters (JSON) gold was built with
OVERRIDES = "reward overrides (run config of gold_tables)"


def rewards_path() -> Path:
    """`TURNLAKE_REWARDS` when set (tests, other deployments), else the shipped rewards.toml."""
    return Path(os.environ.get("TURNLAKE_REWARDS", REWARDS_FILE))


def load_params(
    path: Path | None = None, overrides: Mapping[str, Any] | str | None = None
) -> dict[str, Any]:
    """The rewards file with `overrides` (a dict, or JSON / TOML text) merged over it, validated."""
    path = path or rewards_path()
    params = _read(Path(path))
    _raise_if(path, schema_problems(params, shipped_params()))
    extra = parse_overrides(overrides)
    _raise_if(OVERRIDES, schema_problems(extra, shipped_params()))
    merged = merge(params, extra)
    _raise_if(f"{path} with the {OVERRIDES}" if extra else path, value_problems(merged))
    return merged


def _raise_if(where: str | Path, problems: list[str]) -> None:
    if problems:
        raise SettingsError(where, problems)


def _read(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except OSError as err:
        raise SettingsError(
            path, [f"cannot read the rewards file: {err.strerror or err}"]
        ) from None
    except tomllib.TOMLDecodeError as err:
        raise SettingsError(path, [f"not valid TOML: {err}"]) from None


@functools.cache
def shipped_params() -> dict[str, Any]:
    """The shipped rewards.toml: the defaults, and the schema every other rewards file follows."""
    return _read(REWARDS_FILE)


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
        try:
            parsed = tomllib.loads(text)
        except tomllib.TOMLDecodeError as err:
            raise SettingsError(OVERRIDES, [f"neither a JSON object nor TOML: {err}"]) from None
    if not isinstance(parsed, dict):
        raise SettingsError(OVERRIDES, ["must be an object / table"])
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


# ---------------------------------------------------------------- validation


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "a table"
    return f"a {type(value).__name__}"


def _where(path: tuple[str, ...]) -> str:
    return f"[{'.'.join(path[:-1])}] {path[-1]}" if len(path) > 1 else f"[{path[0]}]"


def schema_problems(
    params: Mapping[str, Any], schema: Mapping[str, Any], path: tuple[str, ...] = ()
) -> list[str]:
    """Keys `schema` lacks and values of another kind than the schema's, one line each."""
    problems = []
    for key, value in params.items():
        here = (*path, str(key))
        if key not in schema:
            what = "unknown table" if not path else "unknown key"
            problems.append(f"{_where(here)}: {what}; allowed: {', '.join(map(str, schema))}")
            continue
        expected = schema[key]
        if _kind(value) != _kind(expected):
            problems.append(
                f"{_where(here)}: should be {_kind(expected)} (shipped: {expected!r}), got "
                f"{value!r}"
            )
        elif isinstance(expected, Mapping):
            problems += schema_problems(value, expected, here)
        elif isinstance(expected, list) and expected:
            wrong = [v for v in value if _kind(v) != _kind(expected[0])]
            if wrong:
                problems.append(
                    f"{_where(here)}: items should be {_kind(expected[0])}, got {wrong!r}"
                )
    return problems


def value_problems(params: Mapping[str, Any]) -> list[str]:
    """The rules on values the shipped types cannot express."""
    from pipelines.gold.common import AGGREGATIONS
    from pipelines.gold.rules import RULES
    from pipelines.gold.step_labels import label_rule_problems

    problems = label_rule_problems(params)
    unknown = [r for r in params.get("rules", {}).get("enabled", []) if r not in RULES]
    if unknown:
        problems.append(
            f"[rules] enabled: unknown rule(s) {unknown}; registered: {', '.join(sorted(RULES))}"
        )
    method = params.get("aggregation", {}).get("method")
    if method is not None and method not in AGGREGATIONS:
        problems.append(f"[aggregation] method: {method!r} is not one of {', '.join(AGGREGATIONS)}")
    pattern = params.get("quality", {}).get("json_request_pattern")
    if pattern is not None:
        try:
            pl.Series([""]).str.contains("(?i)" + pattern)  # the engine quality signals use
        except pl.exceptions.ComputeError as err:
            reason = " ".join(str(err).split("This error occurred")[0].split())
            problems.append(
                f"[quality] json_request_pattern: not a valid regular expression: {reason}"
            )
    return problems
