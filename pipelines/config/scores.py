"""The score-config registry: `scores.toml` at the project root (`TURNLAKE_SCORES` overrides the
path), one table per feedback name saying what a row of that name may hold
(docs/concepts/scores.md).

Like Langfuse's and LangSmith's score configs: a name has a data type, the scales it is recorded on,
an optional range or set of categories, and the sources that may emit it. Silver screens every
feedback row against it (pipelines/transforms/scores.py); this module only reads and checks the
file. A bad file raises `SettingsError` naming the file, the score and the key.
"""

from __future__ import annotations

import functools
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import orjson
from pydantic import Field, RootModel, ValidationError, model_validator

from pipelines.config.names import SOURCES
from pipelines.config.settings import SettingsError
from pipelines.config.table import Table

SCORES_FILE = Path(__file__).resolve().parents[2] / "scores.toml"

DataType = Literal["numeric", "categorical", "boolean", "text"]


@dataclass(frozen=True)
class ScaleRule:
    """What a `feedback.scale` value implies on its own, before any score config narrows it:
    `low`/`high` bound value_num (None: unbounded), `whole` asks for a whole number, `needs_text`
    for a value_text; a numeric scale always needs a finite value_num."""

    type: str
    low: float | None = None
    high: float | None = None
    whole: bool = False
    needs_text: bool = False

    @property
    def numeric(self) -> bool:
        return self.type in ("numeric", "boolean")


# The Feedback.scale vocabulary the transforms write, each with its implied type and range. `number`
# (a scenario label that is a number outside [0, 1]) and `raw` (a dialogue `quality` whose numbers
# fit no known scale) are the sources' own words for a number of unstated scale, as is
# `as_recorded`; `unknown` is a decision rating whose scale no evidence settles.
SCALES: dict[str, ScaleRule] = {
    "[-1,1]": ScaleRule("numeric", -1.0, 1.0),
    "[0,1]": ScaleRule("numeric", 0.0, 1.0),
    "1-5": ScaleRule("numeric", 1.0, 5.0),
    "bool": ScaleRule("boolean", 0.0, 1.0, whole=True),
    "count": ScaleRule("numeric", 0.0, None, whole=True),
    "rank": ScaleRule("numeric", 0.0, None, whole=True),
    "unknown": ScaleRule("numeric"),
    "as_recorded": ScaleRule("numeric"),
    "number": ScaleRule("numeric"),
    "raw": ScaleRule("numeric"),
    "category": ScaleRule("categorical", needs_text=True),
    "text": ScaleRule("text", needs_text=True),
}

Scale = Literal[
    "[-1,1]",
    "[0,1]",
    "1-5",
    "bool",
    "count",
    "rank",
    "unknown",
    "as_recorded",
    "number",
    "raw",
    "category",
    "text",
]
Source = Literal[SOURCES]  # type: ignore[valid-type]


class ScoreConfig(Table):
    """One feedback name: its data type(s), the scales it may carry, an optional numeric range and
    category set, the sources that may emit it."""

    type: DataType | Annotated[list[DataType], Field(min_length=1)]
    scales: Annotated[list[Scale], Field(min_length=1)]
    range: Annotated[list[float], Field(min_length=2, max_length=2)] | None = None
    categories: Annotated[list[Annotated[str, Field(min_length=1)]], Field(min_length=1)] | None = (
        None
    )
    sources: Annotated[list[Source], Field(min_length=1)]
    description: Annotated[str, Field(min_length=1)]

    @property
    def types(self) -> list[str]:
        return [self.type] if isinstance(self.type, str) else list(self.type)

    @model_validator(mode="after")
    def _agrees(self) -> ScoreConfig:
        implied = {SCALES[s].type for s in self.scales}
        if implied != set(self.types):
            raise ValueError(
                f"type {self.type!r} does not agree with scales {self.scales}: those scales are "
                f"{', '.join(sorted(implied))} (list every type a scale implies, and no other)"
            )
        if self.range is not None and self.range[0] > self.range[1]:
            raise ValueError(f"range {self.range}: the low bound is above the high one")
        if self.categories is not None and len(set(self.categories)) < len(self.categories):
            raise ValueError("categories: a category is listed twice")
        return self


class ScoreRegistry(RootModel[dict[Annotated[str, Field(min_length=1)], ScoreConfig]]):
    """The whole file: feedback name → its config."""


def scores_path() -> Path:
    """`TURNLAKE_SCORES` when set (tests, other deployments), else the shipped scores.toml."""
    return Path(os.environ.get("TURNLAKE_SCORES", SCORES_FILE))


def load_scores(path: Path | None = None) -> dict[str, ScoreConfig]:
    """The score configs of `path` (default `scores_path()`), validated; `SettingsError` naming
    the file, the score and the key when the file is unreadable or a config is wrong."""
    path = Path(path or scores_path())
    try:
        data = path.read_bytes()
    except OSError as err:
        raise SettingsError(
            path, [f"cannot read the score configs: {err.strerror or err}"]
        ) from None
    return _parsed(str(path), data)


@functools.lru_cache(maxsize=8)
def _parsed(where: str, data: bytes) -> dict[str, ScoreConfig]:
    # Keyed on the file's bytes: every silver chunk asks, and the file is tiny to re-read.
    try:
        parsed = tomllib.loads(data.decode())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise SettingsError(where, [f"not valid TOML: {err}"]) from None
    try:
        return ScoreRegistry.model_validate(parsed).root
    except ValidationError as err:
        raise SettingsError(where, [_problem(e) for e in err.errors(include_url=False)]) from None


def _problem(error: Any) -> str:
    """`[name] key: what is wrong` in the file's own words."""
    loc = [str(part) for part in error["loc"] if part not in ("[key]",)]
    table, key = (loc[0], ".".join(loc[1:])) if loc else ("", "")
    if error["type"] == "value_error":
        message = str(error["ctx"]["error"])
    elif error["type"] == "extra_forbidden":
        message = f"unknown key; allowed: {', '.join(ScoreConfig.model_fields)}"
    elif error["type"] == "missing":
        message = "missing"
    else:
        message = f"{error['msg']}, got {error.get('input')!r}"
    return f"[{table}] {key}: {message}" if key else f"[{table}]: {message}"


def scores_digest(configs: dict[str, ScoreConfig]) -> bytes:
    """The configs as canonical JSON: what silver is a function of (not the file's layout)."""
    dumped = {name: config.model_dump(mode="json") for name, config in configs.items()}
    return orjson.dumps(dumped, option=orjson.OPT_SORT_KEYS)
