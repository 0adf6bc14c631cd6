"""`[release]` of turnlake.toml: release semantics, the dataset card (`[release.card]`) and
release profiles (`[release.profiles.<name>]`, published as their own configs:
release/card/profiles.py).
"""

from __future__ import annotations

from typing import Annotated, Literal, Self

from pydantic import AfterValidator, Field, NonNegativeInt, field_validator, model_validator

from pipelines.config.extras import minari_missing
from pipelines.config.names import RELEASED_DATASETS, SOURCES
from pipelines.config.table import Table


def _known_sources(names: list[str]) -> list[str]:
    unknown = [n for n in names if n not in SOURCES]
    if unknown:
        raise ValueError(f"unknown source {unknown[0]!r}; allowed: {', '.join(SOURCES)}")
    return names


def _known_datasets(names: list[str]) -> list[str]:
    unknown = [n for n in names if n not in RELEASED_DATASETS]
    if unknown:
        raise ValueError(f"unknown dataset {unknown[0]!r}; allowed: {', '.join(RELEASED_DATASETS)}")
    return names


ProfileName = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]*$", max_length=64)]
Reward = Annotated[float, Field(ge=-1.0, le=1.0)]


class Profile(Table):
    """`[release.profiles.<name>]`: a named selection published as its own config(s)."""

    sources: Annotated[list[str], AfterValidator(_known_sources)] | None = None  # None: all
    datasets: Annotated[list[str], AfterValidator(_known_datasets)] | None = None  # None: all
    min_reward: Reward | None = None  # rows (rl_steps: episodes' returns) below it are left out
    # Reward-0 KTO rows: None = as the release; "keep" needs `kto_include_neutral = true`.
    kto_neutral: Literal["keep", "drop"] | None = None
    require_margin: bool = False  # preference pairs need both rewards, chosen above rejected


class Card(Table):
    """`[release.card]`: the dataset card's Hugging Face metadata and its warning thresholds."""

    pretty_name: str = "turnlake training sets"
    language: list[str] = Field(default_factory=lambda: ["en"])
    license: str = "other"
    license_name: str = "turnlake-source-data"
    license_link: str = "LICENSE"
    tiny_split_rows: NonNegativeInt = 50
    label_skew: Annotated[float, Field(gt=0.5, le=1.0)] = 0.9
    missing_margin_share: Annotated[float, Field(ge=0.0, le=1.0)] = 0.5


# MinHash settings shared by `[release.decontamination]` and `[splits.near_duplicates]`
ShingleSize = Annotated[int, Field(ge=1, le=16)]  # words per MinHash shingle
Similarity = Annotated[float, Field(gt=0.0, le=1.0)]  # estimated Jaccard similarity
Permutations = Annotated[int, Field(ge=16, le=1024)]
Bands = Annotated[int, Field(ge=1, le=1024)]  # LSH bands of num_perm / bands rows


class MinHash(Table):
    """The MinHash settings shared by `[release.decontamination]` and `[splits.near_duplicates]`."""

    shingle_size: ShingleSize = 3
    threshold: Similarity = 0.5
    num_perm: Permutations = 128
    bands: Bands = 32

    @model_validator(mode="after")
    def _bands_divide(self) -> Self:
        if self.num_perm % self.bands:
            raise ValueError(f"bands ({self.bands}) must divide num_perm ({self.num_perm})")
        return self


class Decontamination(MinHash):
    """`[release.decontamination]`: when a training row's user text overlaps an evaluation prompt
    of `[release] decontaminate` (docs/concepts/decontamination.md). N-gram defaults are
    open-instruct's (8-grams, a share above 0.5 of the evaluation prompt's words)."""

    ngram_size: Annotated[int, Field(ge=1, le=64)] = 8
    ngram_share: Annotated[float, Field(ge=0.0, lt=1.0)] = 0.5


class Release(Table):
    kto_include_neutral: bool = False
    sft_include_negative: bool = False
    # A reward combined from several raters' scores is released only with at least this many
    # raters and this agreement (docs/concepts/agreement.md); None: no minimum.
    min_raters: Annotated[int, Field(ge=1)] | None = None
    min_label_agreement: Annotated[float, Field(ge=0.0, le=1.0)] | None = None
    # Where releases are published after they are written locally, and what `releases`, `verify`
    # and `pull` read: a folder or s3://bucket/prefix (None: <data root>/exports only).
    store: str | None = None
    # The `rl_steps` episodes also as Minari datasets in every release (`minari/`): off by
    # default, as they cost ~60x the bytes of `rl_steps` and ~20 s CPU per 100 MB of raw logs;
    # `turnlake export minari <version>` writes them for any published release instead.
    minari: bool = False
    card: Card = Field(default_factory=Card)
    profiles: dict[ProfileName, Profile] = Field(default_factory=dict)
    # Evaluation sets (JSONL or Parquet, paths relative to turnlake.toml) whose prompts and close
    # variants leave the train and validation splits.
    decontaminate: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list)
    decontamination: Decontamination = Field(default_factory=Decontamination)

    @field_validator("store")
    @classmethod
    def _store_is_a_root(cls, value: str | None) -> str | None:
        # imported only when a store is configured: obstore takes ~60 ms to load
        from pipelines.storage.objects import ObjectRoot, ObjectStoreError

        if value is None:
            return None
        try:
            ObjectRoot.parse(value)
        except ObjectStoreError as err:
            raise ValueError(str(err)) from None
        return value

    @field_validator("minari")
    @classmethod
    def _minari_installed(cls, value: bool) -> bool:
        if value and (problem := minari_missing()):
            raise ValueError(problem)
        return value

    @model_validator(mode="after")
    def _profiles_fit(self) -> Release:
        for name, profile in self.profiles.items():
            if name in RELEASED_DATASETS:
                raise ValueError(f"profile {name!r} has the name of a dataset; choose another")
            if profile.kto_neutral == "keep" and not self.kto_include_neutral:
                raise ValueError(
                    f"profile {name!r} has kto_neutral = 'keep', but the release leaves reward-0 "
                    "KTO rows out: set [release] kto_include_neutral = true, or drop the key"
                )
        return self
