"""Chat examples from sources whose turns form trees (`turns.parent_turn_id`): OASST message trees
and HH-RLHF pairs. A tree turn's conversation is its path from the root, not the turns before it
in `turn_index` order (those include other branches).

- `best_path_examples` (sft): per OASST tree, the path that follows the best-ranked reply at every
  level (rank 0 first; an unranked reply after the ranked ones; ties by turn_index), as OASST's own
  "top-1" threads; one example per assistant turn on it, its path as the messages.
- `sibling_rank_pairs` (preference): two ranked assistant replies to one message: the better-ranked
  one chosen, the other rejected, prompt = the path to their parent. Every ordered pair of the
  ranked siblings. A pair whose chosen reply has the lower oasst_feedback reward is dropped
  (the data contradicts the ranking), as correction pairs are.
- `hh_pairs` (preference): an HH-RLHF pair: prompt = the shared turns, chosen / rejected = the two
  answers (consecutive assistant turns become one message in the chat shape).
"""

from __future__ import annotations

import polars as pl

from pipelines.exports.datasets.common import MESSAGES, as_messages, message, visible_turns

BEST_PATH_SOURCES = ("oasst",)
RANKED_SOURCES = ("oasst",)
PAIR_SOURCES = ("hh_rlhf",)
RANK_RULE = "oasst_feedback"


def _of(turns: pl.DataFrame, episodes: pl.DataFrame, sources: tuple[str, ...]) -> pl.DataFrame:
    meta = episodes.filter(pl.col("source").is_in(sources)).select("episode_id", "source")
    return visible_turns(turns).join(meta, on="episode_id")


def ancestors(turns: pl.DataFrame) -> pl.DataFrame:
    """(target_id, ctx_index, role, text) for each turn and every turn above it; ctx_index orders
    the path from the root (most negative) to the turn itself (0)."""
    edges = turns.select("turn_id", "parent_turn_id")
    step = edges.select(target_id="turn_id", ctx_id="turn_id", up=pl.lit(0), next="parent_turn_id")
    found = [step]
    while step.height:
        step = (
            step.filter(pl.col("next").is_not_null())
            .join(edges, left_on="next", right_on="turn_id")
            .select("target_id", ctx_id="next", up=pl.col("up") + 1, next="parent_turn_id")
        )
        found.append(step)
    paths = pl.concat(found).select("target_id", "ctx_id", ctx_index=-pl.col("up"))
    return paths.join(turns.select(pl.col("turn_id").alias("ctx_id"), "role", "text"), on="ctx_id")


def _rank() -> pl.Expr:
    return pl.col("attributes").str.json_path_match("$.rank").cast(pl.Int64, strict=False)


def best_path_examples(turns: pl.DataFrame, episodes: pl.DataFrame) -> pl.DataFrame:
    """(turn_id, episode_id, source, turn_index, actor_id, messages) along each tree's best path."""
    tree = _of(turns, episodes, BEST_PATH_SOURCES)
    best = tree.sort(_rank(), "turn_index", nulls_last=True).unique(
        ["episode_id", "parent_turn_id"], keep="first"
    )
    on_path = best.select("turn_id", "parent_turn_id")
    path = on_path.filter(pl.col("parent_turn_id").is_null())
    frontier = path
    while frontier.height:
        frontier = on_path.join(
            frontier.select(parent_turn_id="turn_id"), on="parent_turn_id", how="semi"
        )
        path = pl.concat([path, frontier])
    targets = tree.join(path.select("turn_id"), on="turn_id", how="semi").filter(
        pl.col("role") == "assistant"
    )
    rows = ancestors(tree).join(targets.select(target_id="turn_id"), on="target_id", how="semi")
    messages = as_messages(rows, pl.col("role"), pl.col("text"))
    return (
        targets.select("turn_id", "episode_id", "source", "turn_index", "actor_id")
        .join(messages.rename({"target_id": "turn_id"}), on="turn_id")
        .filter(pl.col("messages").list.len() >= 2)
    )


def _rewards(turn_rewards: pl.DataFrame | None) -> pl.DataFrame:
    columns = {"turn_id": pl.String, "reward": pl.Float64, "feedback_ids": pl.List(pl.String)}
    if turn_rewards is None:
        return pl.DataFrame(schema=columns)
    rows = turn_rewards.filter(pl.col("reward_rule").str.starts_with(f"{RANK_RULE}@"))
    return rows.select(list(columns)).unique("turn_id", keep="first")


def sibling_rank_pairs(
    silver: dict[str, pl.DataFrame], gold: dict[str, pl.DataFrame]
) -> pl.DataFrame:
    """Better-ranked (chosen) vs worse-ranked (rejected) assistant replies to one message."""
    tree = _of(silver["turns"], silver["episodes"], RANKED_SOURCES)
    ranked = tree.filter((pl.col("role") == "assistant") & _rank().is_not_null()).select(
        "episode_id", "parent_turn_id", "turn_id", "text", rank=_rank()
    )
    rank_ids = (
        silver["feedback"]
        .filter(pl.col("name") == "sibling_rank")
        .select("turn_id", rank_feedback="feedback_id")
    )
    ranked = ranked.join(rank_ids, on="turn_id", how="left")
    rewards = _rewards(gold.get("turn_rewards"))
    ranked = ranked.join(rewards, on="turn_id", how="left")
    pairs = ranked.join(ranked, on=["episode_id", "parent_turn_id"], suffix="_rejected").filter(
        (pl.col("rank") < pl.col("rank_rejected"))
        & (pl.col("text") != pl.col("text_rejected"))
        & ~(pl.col("reward") < pl.col("reward_rejected")).fill_null(False)
    )
    prompts = as_messages(ancestors(tree), pl.col("role"), pl.col("text"))
    feedback_ids = pl.concat_list(
        pl.concat_list("rank_feedback", "rank_feedback_rejected").list.drop_nulls(),
        pl.col("feedback_ids").fill_null([]),
        pl.col("feedback_ids_rejected").fill_null([]),
    )
    has_reward = pl.col("reward").is_not_null() | pl.col("reward_rejected").is_not_null()
    return pairs.join(
        prompts.rename({"target_id": "parent_turn_id", "messages": "prompt"}), on="parent_turn_id"
    ).select(
        "episode_id",
        "prompt",
        pl.concat_list(message("assistant", pl.col("text"))).cast(MESSAGES).alias("chosen"),
        pl.concat_list(message("assistant", pl.col("text_rejected")))
        .cast(MESSAGES)
        .alias("rejected"),
        chosen_turn_id="turn_id",
        rejected_turn_id="turn_id_rejected",
        reward_chosen="reward",
        reward_rejected="reward_rejected",
        feedback_ids=feedback_ids.list.unique().list.eval(pl.element().sort()),
        reward_rule=pl.when(has_reward).then(pl.lit(f"{RANK_RULE}@1")),
        pair_kind=pl.lit("sibling_rank"),
    )


def hh_pairs(silver: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """Each HH-RLHF pair: the shared prompt, the chosen and the rejected answer."""
    tree = _of(silver["turns"], silver["episodes"], PAIR_SOURCES).with_columns(
        branch=pl.col("attributes").str.json_path_match("$.branch")
    )
    parts = {}
    for branch in ("prompt", "chosen", "rejected"):
        rows = tree.filter(pl.col("branch") == branch).select(
            target_id="episode_id", ctx_index="turn_index", role="role", text="text"
        )
        parts[branch] = as_messages(rows, pl.col("role"), pl.col("text")).rename(
            {"target_id": "episode_id", "messages": branch}
        )
    preferred = silver["feedback"].filter(pl.col("name") == "preferred")
    ids = preferred.group_by("episode_id").agg(feedback_ids=pl.col("feedback_id").sort())
    return (
        parts["prompt"]
        .join(parts["chosen"], on="episode_id")
        .join(parts["rejected"], on="episode_id")
        .join(ids, on="episode_id", how="left")
        .with_columns(pair_kind=pl.lit("hh_rlhf"))
    )
