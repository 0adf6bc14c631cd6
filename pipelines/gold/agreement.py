"""Inter-rater agreement per score name: Krippendorff's alpha over silver `feedback`.

An item is one judged target (a turn, decision, agent round or episode) and one score name; its
ratings are the current feedback rows of that name on it, one per rater (`raters.rater`: a rater
who rated one item twice counts with the last rating). Alpha compares the ratings of items that
have at least two, so only those items count (`n_items`, `n_ratings`).

The level of measurement comes from each scale's type in scores.toml: categories and booleans are
nominal, a `rank` ordinal, numbers interval — ratio where the name's `range` (or, without one,
every numeric scale of it) starts at 0. Numbers on a bounded scale are put on [0, 1] first
((x − low) / (high − low)), so a 1–5 rating and a 0–1 rating of one name compare; a number whose
scale is `unknown` is left out, it cannot be compared.

Two kinds of rows are not one rater's rating:
- a tally of votes (scale `count` with the voted label in value_text, e.g. OpenAssistant's emoji
  counts) stands for that many raters each voting the label; only the mutually exclusive votes of
  `VOTES` take part (a reader gives +1 or −1, not both), as nominal values;
- a mean of several raters (attributes `count`, e.g. an OpenAssistant label) hides their values,
  so its name is not computable from it.

A name with no item rated twice, or whose ratings are all one value (alpha is then 0/0), is "not
computable", with the reason: never a number.

`stored_agreement` is the table of the stored silver feedback: a build's release (its card and
manifest) and its views both state it, and compute it once between them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

import numpy as np
import polars as pl

from pipelines.config.scores import SCALES, ScoreConfig, load_scores
from pipelines.gold.common import may_name_key
from pipelines.gold.raters import rater
from pipelines.schemas import polars_schema
from pipelines.schemas.gold import RaterAgreement
from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout

NOMINAL, ORDINAL, INTERVAL, RATIO = "nominal", "ordinal", "interval", "ratio"
VOTES = {"emoji": ("+1", "-1")}  # score name → the labels its tallies vote for
COMPUTED = "computed"
NOT_COMPUTABLE = "not computable"

RATINGS_SCHEMA = pl.Schema(
    {
        "name": pl.String,
        "level": pl.String,
        "item": pl.String,
        "value": pl.String,  # a label, or a number written as text (levels other than nominal)
        "count": pl.Int64,
    }
)
AGREEMENT_SCHEMA = polars_schema(RaterAgreement)
FEEDBACK_COLUMNS = (
    "feedback_id",
    "episode_id",
    "turn_id",
    "decision_id",
    "agent_id",
    "target",
    "name",
    "value_num",
    "value_text",
    "scale",
    "observed_at",
    "attributes",
)


def scale_level(scale: str, config: ScoreConfig) -> str | None:
    """The level of measurement of ratings on `scale` for a name configured as `config`; None for
    free text."""
    kind = SCALES[scale].type
    if kind == "text":
        return None
    if kind in ("categorical", "boolean"):
        return NOMINAL
    if scale == "rank":
        return ORDINAL
    low = (
        config.range[0]
        if config.range is not None
        else min(
            (SCALES[s].low if SCALES[s].low is not None else -1.0)
            for s in config.scales
            if SCALES[s].type == "numeric"
        )
    )
    return RATIO if low == 0 else INTERVAL


def _levels(name: str, config: ScoreConfig) -> list[str | None]:
    if name in VOTES:
        return [NOMINAL]
    return list(dict.fromkeys(scale_level(s, config) for s in config.scales))


def _on_unit_scale(value: pl.Expr) -> pl.Expr:
    """value_num of a bounded scale put on [0, 1]; others as recorded; `unknown` → null."""
    expr = pl.when(pl.col("scale") == "unknown").then(None)
    for scale, rule in SCALES.items():
        if rule.low is not None and rule.high is not None and rule.high > rule.low:
            expr = expr.when(pl.col("scale") == scale).then(
                (value - rule.low) / (rule.high - rule.low)
            )
    return expr.otherwise(value)


# A mean of several raters' values, not one rater's rating (see the module's docstring).
AGGREGATED = pl.col("attributes").str.json_path_match("$.count").is_not_null()

Feedback = pl.DataFrame | pl.LazyFrame | Sequence[pl.DataFrame | pl.LazyFrame]


def _parts(feedback: Feedback) -> list[pl.LazyFrame]:
    """`feedback` as the parts it is rated in: one frame, or the frames it was given in."""
    frames = [feedback] if isinstance(feedback, pl.DataFrame | pl.LazyFrame) else feedback
    return [frame.lazy() for frame in frames]


def ratings(feedback: Feedback, configs: Mapping[str, ScoreConfig]) -> pl.DataFrame:
    """One row per item, level and value with how many raters gave it (`RATINGS_SCHEMA`), for the
    items rated at least twice. `feedback`: one frame, or parts of it that each hold every row of
    their episodes (a partitioned table's partitions), rated one at a time: only one part's rows
    are held (at 1 GB of raw data the whole table is ~360 MB, its `attributes` half of it)."""
    found = [_part_ratings(part, configs) for part in _parts(feedback)]
    if not found:
        return pl.DataFrame(schema=RATINGS_SCHEMA)
    return pl.concat(found).sort("name", "level", "item", "value")


def _part_ratings(feedback: pl.LazyFrame, configs: Mapping[str, ScoreConfig]) -> pl.DataFrame:
    """`ratings` of feedback that holds every row of its items (each item names its episode)."""
    # An item with one row has one rating (unless it is a tally of votes): drop those first,
    # before the costlier work (most targets carry one score of a name).
    # Rows are grouped by a hash of their target (a window over six string columns cost twice
    # as much): a collision only keeps a single rating, which `pairable` below drops.
    target = pl.struct("name", "target", "episode_id", "turn_id", "decision_id", "agent_id")
    rows = (
        feedback.lazy()
        .select(FEEDBACK_COLUMNS)
        .filter(
            pl.col("name").is_in(list(configs))
            & (target.hash().is_duplicated() | pl.col("name").is_in(list(VOTES)))
        )
    )
    level_of = {
        (name, scale): scale_level(scale, config)
        for name, config in configs.items()
        for scale in config.scales
    }
    keys = pl.concat_str(pl.col("name"), pl.col("scale"), separator="\0")
    flat = {f"{n}\0{s}": lvl for (n, s), lvl in level_of.items() if lvl is not None}
    item = pl.concat_str(
        "target",
        "episode_id",
        pl.col("turn_id").fill_null(""),
        pl.col("decision_id").fill_null(""),
        pl.col("agent_id").fill_null(""),
        separator="\0",
    )
    tallies = _tallies(rows, item)
    single = (
        rows.filter(~pl.col("name").is_in(list(VOTES)) & ~AGGREGATED.fill_null(False))
        .with_columns(
            level=keys.replace_strict(flat, default=None, return_dtype=pl.String),
            item=item,
            rater=rater(),
        )
        .filter(pl.col("level").is_not_null())
        .with_columns(
            value=pl.when(pl.col("level") == NOMINAL)
            .then(pl.coalesce(pl.col("value_text"), pl.col("value_num").cast(pl.String)))
            .otherwise(_on_unit_scale(pl.col("value_num")).cast(pl.String))
        )
        .filter(pl.col("value").is_not_null())
        # a rater's last rating of an item is their rating of it (an untimed one is the oldest)
        .group_by("name", "level", "item", "rater")
        .agg(pl.col("value").sort_by("observed_at", "feedback_id", nulls_last=False).last())
        .group_by("name", "level", "item", "value")
        .agg(count=pl.len().cast(pl.Int64))
    )
    both = pl.concat([single.select(RATINGS_SCHEMA.names()), tallies])
    pairable = pl.col("count").sum().over("name", "level", "item") >= 2
    return both.filter(pairable).collect()


def _tallies(rows: pl.LazyFrame, item: pl.Expr) -> pl.LazyFrame:
    frames = [
        rows.filter(
            (pl.col("name") == name)
            & (pl.col("scale") == "count")
            & pl.col("value_text").is_in(list(labels))
            & (pl.col("value_num") > 0)
        ).select(
            "name",
            level=pl.lit(NOMINAL),
            item=item,
            value="value_text",
            count=pl.col("value_num").round().cast(pl.Int64),
        )
        for name, labels in VOTES.items()
    ]
    return pl.concat(frames) if frames else pl.LazyFrame(schema=RATINGS_SCHEMA)


def krippendorff_alpha(found: pl.DataFrame, level: str) -> float:
    """Alpha of ratings `found` (item, value, count: how many raters gave the item that value;
    values are labels when nominal, numbers written as text otherwise): 1 − D_o / D_e over the
    coincidences of the values within each item and across all pairable values (Krippendorff,
    "Computing Krippendorff's alpha-reliability", 2011).

    Nominal, interval and ordinal distances add up in closed form per item; ratio distances
    pair the values within each item, and the distinct values across items a block at a time.
    (The `krippendorff` package builds items × values × values arrays instead: gigabytes and
    most of a build's CPU for thousands of items with hundreds of distinct values.)"""
    # every group and join keeps the rows' order: float sums in an order that varies from run to
    # run (a parallel group_by's) gave alphas differing in their last bits
    rated = found.select("item", "value", count=pl.col("count").cast(pl.Float64)).filter(
        pl.col("count").sum().over("item") >= 2  # an item counts with a pair of ratings
    )
    number = pl.lit(None, pl.Float64) if level == NOMINAL else pl.col("value").cast(pl.Float64)
    rated = rated.with_columns(x=number)
    totals = rated.group_by("value", maintain_order=True).agg(
        pl.col("count").sum(), pl.col("x").first()
    )
    if level == ORDINAL:  # two ranks are as far apart as their midranks among all values
        totals = totals.sort("x").with_columns(x=pl.col("count").cum_sum() - pl.col("count") / 2)
        rated = rated.drop("x").join(totals.select("value", "x"), on="value")
    if level == RATIO:
        per_item = _ratio_pairs_per_item(rated)
        across = _ratio_pairs(
            totals.get_column("x").to_numpy(), totals.get_column("count").to_numpy()
        )
    else:
        per_item = rated.group_by("item", maintain_order=True).agg(
            m=pl.col("count").sum(), apart=_pairs_apart(level)
        )
        across = totals.select(_pairs_apart(level)).item()
    observed = (per_item.get_column("apart") / (per_item.get_column("m") - 1)).sum()
    expected = across / (totals.get_column("count").sum() - 1)
    return float(1 - observed / expected)


def _pairs_apart(level: str) -> pl.Expr:
    """Σ over ordered pairs of a group's ratings of their squared distance: m² − Σ n_c² for
    labels, 2·m·Σ n_c·(x_c − x̄)² for numbers (m ratings, n_c of value c)."""
    m = pl.col("count").sum()
    if level == NOMINAL:
        return m**2 - (pl.col("count") ** 2).sum()
    mean = (pl.col("count") * pl.col("x")).sum() / m
    return 2 * m * (pl.col("count") * (pl.col("x") - mean) ** 2).sum()


def _ratio_distance(x: pl.Expr, y: pl.Expr) -> pl.Expr:
    return pl.when(x + y != 0).then(((x - y) / (x + y)) ** 2).otherwise(0.0)


def _ratio_pairs_per_item(rated: pl.DataFrame) -> pl.DataFrame:
    pairs = rated.join(
        rated, on="item", suffix="_other", maintain_order="left_right"
    )  # an item's few values, pairwise
    weight = pl.col("count") * pl.col("count_other")
    apart = (weight * _ratio_distance(pl.col("x"), pl.col("x_other"))).sum()
    m = rated.group_by("item", maintain_order=True).agg(m=pl.col("count").sum())
    apart_by_item = pairs.group_by("item", maintain_order=True).agg(apart=apart)
    return apart_by_item.join(m, on="item", maintain_order="left")


def _ratio_pairs(x: np.ndarray, n: np.ndarray, block: int = 1024) -> float:
    """Σ n_c·n_k·((x_c − x_k) / (x_c + x_k))² over ordered pairs of distinct values."""
    total = 0.0
    for start in range(0, x.size, block):
        rows = slice(start, start + block)
        diff = x[rows, None] - x[None, :]
        both = x[rows, None] + x[None, :]
        ratio = np.divide(diff, both, out=np.zeros_like(diff), where=both != 0)
        total += float((n[rows, None] * n[None, :] * ratio**2).sum())
    return total


def _row(name: str, level: str | None, found: pl.DataFrame, why_none: str | None) -> dict:
    per_item = found.group_by("item").agg(pl.col("count").sum()) if found.height else None
    n_items = per_item.height if per_item is not None else 0
    row = {
        "name": name,
        "level": level,
        "alpha": None,
        "n_items": n_items,
        "n_ratings": int(per_item.get_column("count").sum()) if n_items else 0,
        "max_raters": int(per_item.get_column("count").max()) if n_items else 0,
        "status": NOT_COMPUTABLE,
        "reason": why_none,
    }
    if why_none is not None:
        return row
    if n_items == 0:
        return row | {"reason": "no item has ratings from 2 or more raters"}
    if found.get_column("value").n_unique() < 2:
        return row | {"reason": "every rating has the same value (alpha is 0/0)"}
    return row | {"alpha": krippendorff_alpha(found, level), "status": COMPUTED, "reason": None}


def _aggregated_names(feedback: Feedback) -> set[str]:
    """Score names with a row that is the mean of several raters (attributes `count`). Only
    attributes that can hold that key are parsed, collected first: a filter on both in one plan
    would parse every row."""
    names: set[str] = set()
    for part in _parts(feedback):
        candidates = part.select("name", "attributes").filter(may_name_key("count")).collect()
        names.update(candidates.filter(AGGREGATED).get_column("name"))
    return names


def agreement(feedback: Feedback, configs: Mapping[str, ScoreConfig]) -> pl.DataFrame:
    """One row per configured score name and level of measurement (`AGREEMENT_SCHEMA`): alpha, or
    "not computable" and why. `feedback`: as `ratings` takes it."""
    found = ratings(feedback, configs)
    aggregated = _aggregated_names(feedback)
    rows = []
    for name in sorted(configs):
        for level in _levels(name, configs[name]):
            mine = found.filter((pl.col("name") == name) & pl.col("level").eq_missing(level))
            why = None
            if level is None:
                why = "free text has no level of measurement"
            elif mine.height == 0 and name in aggregated:
                why = "the source records only the mean of its raters"
            rows.append(_row(name, level, mine, why))
    table = pl.DataFrame(rows, schema=AGREEMENT_SCHEMA, orient="row")
    return RaterAgreement.validate(table, lazy=True)


# (the feedback table's files, the score configs) → its agreement, the last one asked in this
# process: a Delta table's files are never rewritten, so new feedback means new file names
_LAST: dict[tuple[tuple[str, ...], str], pl.DataFrame] = {}


def stored_agreement(layout: Layout, as_of: datetime | None = None) -> pl.DataFrame | None:
    """`agreement` of the silver feedback in force (or at `as_of`) under the score configs of
    now; None without a feedback table."""
    if not stored.exists(layout, "silver", "feedback", as_of):
        return None
    configs = load_scores()
    key = (tuple(stored.files(layout, "silver", "feedback", as_of)), repr(sorted(configs.items())))
    if key not in _LAST:
        feedback = stored.scan_by_partition(layout, "silver", "feedback", as_of)
        table = agreement(feedback, configs)
        _LAST.clear()
        _LAST[key] = table
    return _LAST[key]
