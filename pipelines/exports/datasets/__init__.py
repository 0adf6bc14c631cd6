"""Training datasets (DESIGN §5) as pure Polars over silver + gold + splits: sft, preference, kto, rl_steps,
decisions. Column shapes follow what TRL / Hugging Face `datasets` load as-is; every frame also carries
`split`, `episode_id`, `group_id`, `source`, `prompt_hash` and reward provenance.

`prompt_hash` = sha256 hex of the exact text an example conditions on: the canonical JSON array of its
prompt messages (`[{"role":…,"content":…},…]`), for rl_steps the observation text. Equal prompts in two
datasets therefore get equal hashes.
"""

from __future__ import annotations

import polars as pl

from pipelines.exports.datasets.common import COMMON, front, sha256_hex, with_split
from pipelines.exports.datasets.decisions import build_decisions, with_decision_prompts
from pipelines.exports.datasets.kto import build_kto
from pipelines.exports.datasets.preference import build_preference
from pipelines.exports.datasets.rl_steps import build_rl_steps
from pipelines.exports.datasets.sft import build_sft

DATASETS = ("sft", "preference", "kto", "rl_steps", "decisions")


def finish(frame: pl.DataFrame, episodes: pl.DataFrame, splits: pl.DataFrame, episode_col: str = "episode_id") -> pl.DataFrame:
    """Split, group and source from the episode; `prompt_hash` from `_prompt_text`; common columns first."""
    out = with_split(frame, episodes, splits, episode_col)
    out = out.with_columns(prompt_hash=sha256_hex(pl.col("_prompt_text"))).drop("_prompt_text")
    return front(out, COMMON)


def build_datasets(
    silver: dict[str, pl.DataFrame], gold: dict[str, pl.DataFrame], splits: pl.DataFrame
) -> dict[str, pl.DataFrame]:
    """Every dataset as a frame (rows of groups without a split are left out)."""
    episodes = silver["episodes"]
    silver = with_decision_prompts(silver, gold)
    sft = build_sft(silver, gold)
    kto = build_kto(silver, gold, sft)
    frames = {
        "sft": sft,
        "preference": build_preference(silver, gold, kto),
        "kto": kto,
        "decisions": build_decisions(silver, gold),
    }
    out = {name: finish(frame, episodes, splits) for name, frame in frames.items()}
    out["rl_steps"] = finish(build_rl_steps(silver, gold), episodes, splits, "source_episode_id")
    return {name: out[name] for name in DATASETS}
