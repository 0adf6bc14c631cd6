"""OASST trees → messages (with why each is left out, if it is) → episodes, turns, feedback."""

from __future__ import annotations

import polars as pl

from pipelines.config.schema import Oasst
from pipelines.schemas import silver_schema

SOURCE = "oasst"
RAW_EXCERPT_CHARS = 2000
ROLE_MAP = {"prompter": "user", "assistant": "assistant"}
EXCLUSION_REASONS = ("deleted", "unreviewed", "synthetic", "below_excluded")


def episode_id() -> pl.Expr:
    return pl.concat_str(pl.lit(f"{SOURCE}:"), pl.col("message_tree_id"))


def with_extra(attributes: pl.Expr) -> pl.Expr:
    """A JSON object text plus the raw `extra` object (embedded as-is) when there is one."""
    embedded = pl.concat_str(
        attributes.str.strip_suffix("}"), pl.lit(',"extra":'), "extra", pl.lit("}")
    )
    return pl.when(pl.col("extra").is_null()).then(attributes).otherwise(embedded)


def dedup_trees(trees: pl.LazyFrame) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """(the latest copy of each tree, `duplicate_conflict` rows for older copies that differ)."""
    key = "message_tree_id"
    marked = trees.sort("file", "line").with_columns(
        is_latest=pl.int_range(pl.len()).over(key) == pl.len().over(key) - 1,
        latest_hash=pl.col("record_hash").last().over(key),
        latest_file=pl.col("file").last().over(key),
        latest_locator=pl.col("locator").last().over(key),
    )
    differing = marked.filter(
        ~pl.col("is_latest") & (pl.col("record_hash") != pl.col("latest_hash"))
    )
    conflicts = differing.select(
        source=pl.lit(SOURCE),
        file="file",
        locator="locator",
        error_kind=pl.lit("duplicate_conflict"),
        message=pl.format(
            "message tree {} appears again with different content; kept the copy in {} at {}",
            pl.col(key),
            pl.col("latest_file"),
            pl.col("latest_locator"),
        ),
        raw=pl.struct(key, "tree_state", "messages")
        .struct.json_encode()
        .str.slice(0, RAW_EXCERPT_CHARS),
        stage=pl.lit("silver"),
        run_id=pl.lit(None, pl.String),
    ).cast(dict(silver_schema("quarantine")))
    kept = marked.filter("is_latest").with_columns(episode_id=episode_id())
    return kept, conflicts


def explode(kept: pl.LazyFrame) -> pl.LazyFrame:
    """One row per message, `position` = its place in the tree's pre-order."""
    return (
        kept.select("episode_id", "messages", position=pl.int_ranges(pl.col("messages").list.len()))
        .explode(["messages", "position"])
        .unnest("messages")
    )


def with_exclusion(messages: pl.LazyFrame, options: Oasst) -> pl.LazyFrame:
    """`excluded_by`: why the message is not a turn, null when it is one. Its own flag first
    (deleted, unreviewed, synthetic), else an excluded ancestor (`below_excluded`)."""
    filters = [
        ("deleted", pl.col("deleted"), pl.col("deleted_above"), options.include_deleted),
        (
            "unreviewed",
            pl.col("review_result").ne_missing(True),
            pl.col("unreviewed_above"),
            options.include_unreviewed,
        ),
        ("synthetic", pl.col("synthetic"), pl.col("synthetic_above"), options.include_synthetic),
    ]
    active = [(name, own, above) for name, own, above, included in filters if not included]
    reason = pl.when(pl.lit(False)).then(pl.lit(None, pl.String))
    for name, own, _ in active:
        reason = reason.when(own).then(pl.lit(name))
    for _, _, above in active:
        reason = reason.when(above).then(pl.lit("below_excluded"))
    return messages.with_columns(excluded_by=reason.otherwise(pl.lit(None, pl.String)))


def numbered(messages: pl.DataFrame) -> pl.DataFrame:
    """Kept messages in pre-order with `turn_index`, `turn_id` and the parent's `parent_turn_id`."""
    kept = messages.filter(pl.col("excluded_by").is_null()).sort("episode_id", "position")
    kept = kept.with_columns(
        turn_index=pl.int_range(pl.len()).over("episode_id").cast(pl.Int64)
    ).with_columns(turn_id=pl.format("{}#{}", pl.col("episode_id"), pl.col("turn_index")))
    parents = kept.select(
        "episode_id", parent_id=pl.col("message_id"), parent_turn_id=pl.col("turn_id")
    )
    return kept.join(parents, on=["episode_id", "parent_id"], how="left")


def turns(messages: pl.DataFrame) -> pl.DataFrame:
    """Kept messages as turns, in pre-order, each pointing at the turn it replies to."""
    kept = numbered(messages)
    attributes = pl.struct(
        "message_id",
        "parent_id",
        "depth",
        "rank",
        "lang",
        "review_count",
        "review_result",
        "deleted",
        "synthetic",
        "model_name",
    ).struct.json_encode()
    return kept.select(
        "turn_id",
        "episode_id",
        "turn_index",
        role=pl.col("role").replace_strict(ROLE_MAP, return_dtype=pl.String),
        native_role="role",
        actor_id="user_id",
        text="text",
        ts="created_at",
        internal=pl.lit(False),
        attributes=with_extra(attributes),
        parent_turn_id="parent_turn_id",
    )


def episodes(kept: pl.LazyFrame, messages: pl.DataFrame) -> pl.LazyFrame:
    """One episode per tree, with the messages left out counted by reason."""
    counts = messages.group_by("episode_id").agg(
        n_messages=pl.len(),
        started_at=pl.col("created_at").min(),
        ended_at=pl.col("created_at").max(),
        lang=pl.col("lang").filter(pl.col("depth") == 0).first(),
        **{reason: (pl.col("excluded_by") == reason).sum() for reason in EXCLUSION_REASONS},
    )
    attributes = pl.struct(
        "dataset",
        "message_tree_id",
        "tree_state",
        "lang",
        "n_messages",
        excluded=pl.struct(*EXCLUSION_REASONS),
    ).struct.json_encode()
    return kept.join(counts.lazy(), on="episode_id", how="left").select(
        "episode_id",
        source=pl.lit(SOURCE),
        native_id="message_tree_id",
        group_id="episode_id",
        started_at="started_at",
        ended_at="ended_at",
        n_turns=pl.lit(0, pl.Int64),
        end_reason=pl.lit(None, pl.String),
        attributes=with_extra(attributes),
        source_file="file",
    )


def feedback(messages: pl.DataFrame) -> pl.DataFrame:
    """Per kept message: a row per emoji (count), per label (value, count) and its sibling rank."""
    kept = numbered(messages)
    emojis = (
        kept.select("episode_id", "turn_id", "message_id", "emojis")
        .explode("emojis")
        .unnest("emojis")
        .filter(pl.col("name").is_not_null())
        .select(
            "episode_id",
            "turn_id",
            feedback_id=pl.format("{}:{}:emoji:{}", pl.lit(SOURCE), "message_id", "name"),
            name=pl.lit("emoji"),
            value_num=pl.col("count").cast(pl.Float64),
            value_text="name",
            scale=pl.lit("count"),
            attributes=pl.lit(None, pl.String),
        )
    )
    labels = (
        kept.select("episode_id", "turn_id", "message_id", "labels")
        .explode("labels")
        .unnest("labels")
        .filter(pl.col("name").is_not_null())
        .select(
            "episode_id",
            "turn_id",
            feedback_id=pl.format("{}:{}:label:{}", pl.lit(SOURCE), "message_id", "name"),
            name=pl.lit("label"),
            value_num="value",
            value_text="name",
            scale=pl.lit("[0,1]"),
            attributes=pl.struct("count").struct.json_encode(),
        )
    )
    ranks = kept.filter(pl.col("rank").is_not_null()).select(
        "episode_id",
        "turn_id",
        feedback_id=pl.format("{}:{}:rank", pl.lit(SOURCE), "message_id"),
        name=pl.lit("sibling_rank"),
        value_num=pl.col("rank").cast(pl.Float64),
        value_text=pl.lit(None, pl.String),
        scale=pl.lit("rank"),
        attributes=pl.struct(parent_turn_id="parent_turn_id").struct.json_encode(),
    )
    return pl.concat([emojis, labels, ranks]).with_columns(
        target=pl.lit("turn"),
        source_kind=pl.lit("human"),
        observed_at=pl.lit(None, pl.Datetime("us", "UTC")),
    )
