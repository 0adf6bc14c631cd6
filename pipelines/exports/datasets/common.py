"""Helpers shared by the dataset builders: message lists, rewards per turn, splits.

Everything here is pure Polars over silver / gold frames; no I/O, no Dagster.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

import polars as pl

from pipelines.gold.raters import LabelMinimum
from pipelines.gold.step_labels import StepLabels

if TYPE_CHECKING:
    from pipelines.config.settings import Settings

MESSAGE = pl.Struct({"role": pl.String, "content": pl.String})
MESSAGES = pl.List(MESSAGE)
# Columns every dataset carries (the release joins, dedups and proves leakage on them).
COMMON = ("split", "episode_id", "group_id", "source", "prompt_hash", "dedup_cluster")
# an episode's near-duplicate prompt cluster (silver `_near_duplicates`, splits/near_dups.py)
DEDUP_CLUSTER = "dedup_cluster"


@dataclass(frozen=True)
class DatasetOptions:
    """Release choices a user may want otherwise (turnlake.toml `[release]`)."""

    kto_include_neutral: bool = False  # keep kto rows with reward exactly 0 (labelled false)
    sft_include_negative: bool = False  # keep sft examples whose final turn has a negative reward
    # rater-combined rewards need this many raters / this agreement (None: no minimum)
    min_raters: int | None = None
    min_label_agreement: float | None = None
    # the `stepwise` label rule: from the gold parameters (rewards.toml), which the release
    # config already holds, so it is not recorded again
    step_labels: StepLabels = field(default_factory=StepLabels)

    @classmethod
    def from_settings(cls, settings: Settings) -> DatasetOptions:
        return cls(
            kto_include_neutral=settings.release_kto_include_neutral,
            sft_include_negative=settings.release_sft_include_negative,
            min_raters=settings.release_min_raters,
            min_label_agreement=settings.release_min_label_agreement,
        )

    def record(self) -> dict:
        """The options as the manifest and the content hash hold them: a label minimum only when
        one is set, so a release without one is the release it was before minimums existed."""
        out = asdict(self)
        del out["step_labels"]
        return {k: v for k, v in out.items() if v is not None or k not in _LABEL_MINIMUM}

    @property
    def label_minimum(self) -> LabelMinimum:
        return LabelMinimum(self.min_raters, self.min_label_agreement)


_LABEL_MINIMUM = ("min_raters", "min_label_agreement")


def messages_text(column: str | pl.Expr) -> pl.Expr:
    """The exact text of a message list: its canonical JSON array of {role, content}, in order."""
    messages = pl.col(column) if isinstance(column, str) else column
    items = messages.list.eval(pl.element().struct.json_encode()).list.join(",")
    return pl.concat_str(pl.lit("["), items, pl.lit("]"))


def message(role: pl.Expr | str, content: pl.Expr | str) -> pl.Expr:
    """One {role, content} struct."""
    role = pl.lit(role) if isinstance(role, str) else role
    content = pl.lit(content) if isinstance(content, str) else content
    return pl.struct(role.cast(pl.String).alias("role"), content.cast(pl.String).alias("content"))


def single(role: str, content: pl.Expr) -> pl.Expr:
    """A one-message list (TRL wants chosen / rejected / completion as message lists)."""
    return pl.concat_list(message(role, content))


def visible_turns(turns: pl.DataFrame) -> pl.DataFrame:
    """Turns that may appear in a training example: shown to others (not `internal`) and
    non-empty.

    Internal Social RL coach messages are never shown to the other agents and the source does not
    say whom they address, so they are left out of every prompt, completion and observation."""
    return turns.filter(~pl.col("internal") & pl.col("text").is_not_null() & (pl.col("text") != ""))


def prefixes(turns: pl.DataFrame, targets: pl.DataFrame, *, inclusive: bool) -> pl.DataFrame:
    """For each target turn (columns episode_id, turn_index, target_id, viewer): the earlier
    visible turns of its episode as (turn_index, role, native_role, actor_id, text) rows, tagged
    with `target_id`.

    `inclusive` keeps the target turn itself. A self-join instead of a row loop: O(turns ×
    length)."""
    ctx = turns.select(
        "episode_id", pl.col("turn_index").alias("ctx_index"), "role", "actor_id", "text"
    )
    joined = targets.select("target_id", "episode_id", "turn_index", "viewer").join(
        ctx, on="episode_id"
    )
    keep = (
        pl.col("ctx_index") <= pl.col("turn_index")
        if inclusive
        else pl.col("ctx_index") < pl.col("turn_index")
    )
    return joined.filter(keep)


def as_messages(
    rows: pl.DataFrame, role: pl.Expr, content: pl.Expr, key: str = "target_id"
) -> pl.DataFrame:
    """Prefix rows → one `messages` list per key, in turn order."""
    return (
        rows.sort(key, "ctx_index")
        .group_by(key, maintain_order=True)
        .agg(message(role, content).alias("messages"))
        .with_columns(pl.col("messages").cast(MESSAGES))
    )


def agent_view_role() -> pl.Expr:
    """Social RL from one agent's view: its own messages are the assistant's, everyone else a
    user."""
    return (
        pl.when(pl.col("actor_id") == pl.col("viewer"))
        .then(pl.lit("assistant"))
        .otherwise(pl.lit("user"))
    )


def agent_view_content() -> pl.Expr:
    """Other agents' messages carry their speaker, so a multi-party chat stays readable as user
    turns."""
    own = pl.col("actor_id") == pl.col("viewer")
    return (
        pl.when(own)
        .then(pl.col("text"))
        .otherwise(
            pl.concat_str(pl.col("actor_id").fill_null("unknown"), pl.lit(": "), pl.col("text"))
        )
    )


def rewards_by(turn_rewards: pl.DataFrame, key: str, targets: tuple[str, ...]) -> pl.DataFrame:
    """One reward per `key` (turn_id or decision_id) from step-level gold rewards: the mean if
    several rules reward the same target, with every rule and feedback id kept for provenance."""
    rows = turn_rewards.filter(pl.col("target").is_in(targets) & pl.col(key).is_not_null())
    # most targets have one rule's reward: those rows are put in shape without a grouping, as the
    # grouping puts them (a missing id list becomes one null id, as `explode` makes it)
    several = rows.get_column(key).is_duplicated()
    single = rows.filter(~several).select(
        key,
        pl.col("reward").cast(pl.Float64),
        pl.col("reward_rule").fill_null(""),
        pl.when(pl.col("feedback_ids").is_null())
        .then(pl.lit([None], dtype=pl.List(pl.String)))
        .when(pl.col("feedback_ids").list.len() <= 1)
        .then(pl.col("feedback_ids"))
        .otherwise(pl.col("feedback_ids").list.unique().list.sort())
        .alias("feedback_ids"),
    )
    grouped = (
        rows.filter(several)
        .group_by(key)
        .agg(
            pl.col("reward").mean(),
            pl.col("reward_rule").unique().sort().str.join(",").alias("reward_rule"),
            pl.col("feedback_ids").explode().unique().sort().alias("feedback_ids"),
        )
    )
    return pl.concat([single, grouped.cast(single.schema)])


def with_split(
    frame: pl.DataFrame,
    episodes: pl.DataFrame,
    splits: pl.DataFrame,
    episode_col: str = "episode_id",
) -> pl.DataFrame:
    """Attach source, group_id and dedup_cluster (via the silver episode; null for an episode
    without a clustered prompt) and the group's split. A group without
    a split row gets no split and is dropped: an unassigned example must never ship in some split
    by default."""
    cluster = pl.col(DEDUP_CLUSTER) if DEDUP_CLUSTER in episodes.columns else pl.lit(None)
    meta = episodes.select(
        pl.col("episode_id").alias(episode_col),
        "group_id",
        "source",
        cluster.cast(pl.String).alias(DEDUP_CLUSTER),
    )
    dropped = ("group_id", "source", "split", DEDUP_CLUSTER)
    out = frame.drop([c for c in dropped if c in frame.columns])
    out = out.join(meta, on=episode_col, how="left")
    return out.join(splits.select("group_id", "split"), on="group_id", how="inner")


def front(frame: pl.DataFrame, first: tuple[str, ...]) -> pl.DataFrame:
    """Put the common columns first (readable files, stable column order)."""
    lead = [c for c in first if c in frame.columns]
    return frame.select(*lead, *[c for c in frame.columns if c not in lead])
