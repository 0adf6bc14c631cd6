"""Release profiles: named selections of a release (`[release.profiles.<name>]` in turnlake.toml),
each published as its own Hugging Face config under `profiles/<config>/`.

Config naming: a profile that selects one dataset is the config `<profile>`; a profile over several
datasets gives one config per dataset, `<profile>-<dataset>` (a config holds one table shape).
A profile only narrows the release: it filters the released rows (already split, deduplicated and
privatized), so every config is a subset of its dataset and keeps its row order."""

from __future__ import annotations

from typing import Any

import polars as pl

PROFILES_DIR = "profiles"
# The reward a row is judged by for `min_reward`, per dataset (rl_steps: the episode's return).
REWARD_COLUMN = {
    "sft": "reward",
    "kto": "reward",
    "preference": "reward_chosen",
    "decisions": "outcome_reward",
    "rl_steps": "reward",
}


def config_names(name: str, datasets: list[str]) -> dict[str, str]:
    """dataset -> config name of profile `name` over `datasets` (see the module doc)."""
    if len(datasets) == 1:
        return {datasets[0]: name}
    return {dataset: f"{name}-{dataset}" for dataset in datasets}


def select(dataset: str, frame: pl.DataFrame, profile: dict[str, Any]) -> pl.DataFrame:
    """The rows of one released dataset that profile `profile` (as in the manifest config) keeps."""
    sources = profile.get("sources")
    if sources is not None:
        frame = (
            frame.filter(pl.col("source").is_in(sources))
            if "source" in frame.columns
            else frame.filter(pl.lit("study" in sources))  # surveys come from the study
        )
    minimum = profile.get("min_reward")
    column = REWARD_COLUMN.get(dataset)
    if minimum is not None and column in frame.columns:
        if dataset == "rl_steps":  # whole episodes, never cut
            returns = pl.col("reward").sum().over("episode_id")
            frame = frame.filter(returns >= minimum)
        else:
            frame = frame.filter(pl.col(column) >= minimum)
    if dataset == "kto" and profile.get("kto_neutral") == "drop":
        frame = frame.filter(pl.col("reward") != 0)
    if dataset == "preference" and profile.get("require_margin"):
        frame = frame.filter(pl.col("reward_chosen") > pl.col("reward_rejected"))
    return frame


def profile_frames(
    datasets: dict[str, pl.DataFrame], profiles: dict[str, dict[str, Any]]
) -> dict[str, tuple[str, str, pl.DataFrame]]:
    """config name -> (profile, dataset, rows) for every profile over the datasets it names that
    the release has (None: all of them)."""
    out = {}
    for name, profile in sorted(profiles.items()):
        requested = profile.get("datasets") or sorted(datasets)
        for dataset, config in config_names(name, requested).items():
            # a dataset the release does not publish (surveys unless configured): no config
            if dataset in datasets:
                out[config] = (name, dataset, select(dataset, datasets[dataset], profile))
    return out
