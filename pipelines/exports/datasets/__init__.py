"""Training datasets (DESIGN §5) as pure Polars over silver + gold + splits: sft, preference,
kto, rl_steps, decisions, stepwise. Column shapes follow what TRL / Hugging Face `datasets` load
as-is; every frame also carries `split`, `episode_id`, `group_id`, `source`, `prompt_hash` and
reward provenance.

Every chat column is put in one chat shape at the end (chat_shape.py), whichever builder made it.

`prompt_hash` = sha256 hex of the exact text an example conditions on: the canonical JSON array
of its prompt messages (`[{"role":…,"content":…},…]`) as shipped (after the chat shape); for
rl_steps the whole episode (see rl_steps.py), for stepwise the whole example (stepwise.py). Equal
prompts in two datasets therefore get equal hashes.
"""

from __future__ import annotations

import polars as pl

from pipelines.exports.datasets.chat_shape import (
    kept_conversations,
    kept_prompt_completions,
    shape_columns,
    shape_prompt_completions,
)
from pipelines.exports.datasets.common import (
    COMMON,
    DEDUP_CLUSTER,
    DatasetOptions,
    front,
    messages_text,
    with_split,
)
from pipelines.exports.datasets.decisions import build_decisions, with_decision_prompts
from pipelines.exports.datasets.kto import build_kto, kto_rows
from pipelines.exports.datasets.preference import build_preference, rated_alternative_pairs
from pipelines.exports.datasets.rl_steps import build_rl_steps, with_study_steps
from pipelines.exports.datasets.sft import build_sft, sft_rows
from pipelines.exports.datasets.stepwise import build_stepwise
from pipelines.gold.raters import released_labels
from pipelines.sources.base import sha256_hex
from pipelines.splits.near_dups import NEAR_DUPS_TABLE

DATASETS = ("sft", "preference", "kto", "rl_steps", "decisions", "stepwise")
# Why a row was left out of a dataset (counts in the split proof and on the dataset card).
NEGATIVE_REWARD, NEUTRAL_REWARD, NO_USER_TURN = "negative_reward", "neutral_reward", "no_user_turn"


def finish(
    frame: pl.DataFrame,
    episodes: pl.DataFrame,
    splits: pl.DataFrame,
    episode_col: str = "episode_id",
) -> pl.DataFrame:
    """Split, group and source from the episode; `prompt_hash` from `_prompt_text`; common
    columns first."""
    out = with_split(frame, episodes, splits, episode_col)
    out = out.with_columns(prompt_hash=sha256_hex(pl.col("_prompt_text"))).drop("_prompt_text")
    return front(out, COMMON)


def shape_chats(frames: dict[str, pl.DataFrame]) -> tuple[dict[str, pl.DataFrame], dict[str, int]]:
    """Every chat column of every dataset in the chat shape, `_prompt_text` from the shaped
    prompt; the rows that cannot be shaped are left out (counted per dataset). The columns that
    open a chat are shaped in one pass, the completions in another."""
    openers = [
        ("sft", "messages"),
        ("kto", "prompt"),
        ("preference", "prompt"),
        ("decisions", "prompt"),
    ]
    completions = [("kto", "completion"), ("preference", "chosen"), ("preference", "rejected")]
    shaped = dict(frames)
    for columns, opens_chat in ((openers, True), (completions, False)):
        series = shape_columns([frames[n][c] for n, c in columns], opens_chat=opens_chat)
        for (name, _), column in zip(columns, series, strict=True):
            shaped[name] = shaped[name].with_columns(column)
    sft, sft_out = kept_conversations(shaped["sft"], "messages")
    sft = sft.with_columns(
        _prompt_text=messages_text(pl.col("messages").list.head(pl.col("messages").list.len() - 1))
    )
    kto, kto_out = kept_prompt_completions(shaped["kto"], "prompt", ("completion",))
    pref, pref_out = kept_prompt_completions(shaped["preference"], "prompt", ("chosen", "rejected"))
    out = {"sft": sft} | {
        name: frame.with_columns(_prompt_text=messages_text("prompt"))
        for name, frame in (("kto", kto), ("preference", pref), ("decisions", shaped["decisions"]))
    }
    return out, {"sft": sft_out, "kto": kto_out, "preference": pref_out}


def build_datasets(
    silver: dict[str, pl.DataFrame],
    gold: dict[str, pl.DataFrame],
    splits: pl.DataFrame,
    options: DatasetOptions | None = None,
    left_out: dict[str, dict[str, int]] | None = None,
    rated_out: list[pl.DataFrame] | None = None,
) -> dict[str, pl.DataFrame]:
    """Every dataset as a frame (rows of groups without a split are left out). `left_out`, when
    given, is filled with how many rows each dataset left out and why (before splits are
    attached). With `rated_out` the rated-alternative pairs are not built (they pair episodes:
    `rated_alternatives` builds them from the rated rows of all chunks of a group) and the rated
    rows, with their episode's group and source, are appended to it."""
    options = options or DatasetOptions()
    episodes = silver["episodes"]
    near = silver.get(NEAR_DUPS_TABLE)
    if near is not None:  # each episode's near-duplicate prompt cluster, released per row
        episodes = episodes.join(near, on="episode_id", how="left", maintain_order="left")
    # rewards below the release's label minimum are no label for any dataset
    kept_rewards, below_minimum = released_labels(gold["turn_rewards"], options.label_minimum)
    gold = {**gold, "turn_rewards": kept_rewards}
    silver = with_study_steps(with_decision_prompts(silver, gold), gold)
    examples = build_sft(silver, gold)
    rated = build_kto(silver, gold, examples)
    sft, negative = sft_rows(examples, options.sft_include_negative)
    kto, neutral = kto_rows(rated, options.kto_include_neutral)
    if rated_out is not None:
        meta = episodes.select("episode_id", "group_id", "source", *_clusters(episodes))
        rated_out.append(rated.join(meta, on="episode_id", how="inner", maintain_order="left"))
    frames = {
        "sft": sft,
        "preference": build_preference(silver, gold, rated, alternatives=rated_out is None),
        "kto": kto,
        "decisions": build_decisions(silver, gold),
    }
    frames, unshaped = shape_chats(frames)
    out = {name: finish(frame, episodes, splits) for name, frame in frames.items()}
    out["rl_steps"] = finish(build_rl_steps(silver, gold), episodes, splits, "source_episode_id")
    stepwise = build_stepwise(silver, gold, options.step_labels)
    out["stepwise"] = finish(stepwise, episodes, splits, "source_episode_id")
    if left_out is not None:
        counts = {"sft": {NEGATIVE_REWARD: negative}, "kto": {NEUTRAL_REWARD: neutral}}
        for name, n in unshaped.items():
            counts.setdefault(name, {})[NO_USER_TURN] = n
        if below_minimum:
            counts["labels"] = below_minimum
        left_out.update({name: dict(sorted(c.items())) for name, c in sorted(counts.items())})
    return {name: out[name] for name in DATASETS}


def _clusters(frame: pl.DataFrame) -> list[str]:
    return [DEDUP_CLUSTER] if DEDUP_CLUSTER in frame.columns else []


def rated_alternatives(
    rated: pl.DataFrame, splits: pl.DataFrame, like: pl.DataFrame
) -> tuple[pl.DataFrame, int]:
    """The `preference` rows of kind rated_alternatives of the rated rows `rated` (as
    `build_datasets` appends them to `rated_out`: every rated row of whole groups), in the columns
    of `like` (a `preference` frame as built), and how many could not be shaped."""
    episodes = rated.select("episode_id", "group_id", "source", *_clusters(rated)).unique()
    pairs = rated_alternative_pairs(
        rated.drop("group_id", "source", *_clusters(rated)), episodes.drop(*_clusters(episodes))
    )
    shaped, unshaped = shape_prompt_completions(pairs, "prompt", ("chosen", "rejected"))
    shaped = shaped.with_columns(_prompt_text=messages_text("prompt"))
    out = pl.concat([like.head(0), finish(shaped, episodes, splits)], how="diagonal_relaxed")
    return out.select(like.columns), unshaped
