"""Gold and splits are rebuilt only when what they are a function of changed (published silver,
parameters or split config, code); otherwise the published snapshot is reused as it is."""

import polars as pl

from pipelines.config.splits import SplitConfig
from pipelines.gold.params import load_params, merge
from pipelines.gold.refresh import refresh_gold
from pipelines.partitions.rows import SILVER_KEYS, digests, tag
from pipelines.partitions.store import DIGESTS_TABLE
from pipelines.schemas import silver_schema
from pipelines.schemas.silver import SILVER_MODELS
from pipelines.splits.assign import refresh_splits
from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout

PARTITION = "b00000-train-s00"


def _publish_silver(layout: Layout, run_id: str, inputs: str, episodes: list[str]) -> None:
    """Silver of `episodes` (each its own group) in one partition, as a build publishes it."""
    tables = {t: pl.DataFrame(schema=silver_schema(t)) for t in SILVER_MODELS}
    tables["episodes"] = (
        pl.DataFrame({"episode_id": episodes, "group_id": episodes})
        .select(
            [
                pl.col(c) if c in ("episode_id", "group_id") else pl.lit(None).alias(c)
                for c in silver_schema("episodes")
            ]
        )
        .cast(silver_schema("episodes"))
    )
    places = {
        key: pl.DataFrame({key: episodes, "_partition": [PARTITION] * len(episodes)})
        for key in ("episode_id", "group_id")
    }
    tagged = tag({t: tables[t] for t in SILVER_KEYS}, SILVER_KEYS, places)
    frames = tables | tagged | {DIGESTS_TABLE: digests(tagged)}
    meta = {stored.RUN: run_id, stored.INPUTS: inputs}
    stored.publish(layout, "silver", frames, meta, partitions=dict.fromkeys(tagged, stored.WHOLE))


def test_gold_is_reused_until_silver_or_parameters_change(tmp_path):
    layout = Layout(tmp_path)
    _publish_silver(layout, "s1", "silver-a", ["e1"])
    params = load_params()
    assert refresh_gold(layout, params, "run-1")[1] is True
    assert refresh_gold(layout, params, "run-2")[1] is False
    assert stored.meta(layout, "gold", stored.RUN) == "run-1"
    changed = merge(params, {"quality": {"correction_terms": ["actually"]}})
    assert refresh_gold(layout, changed, "run-3")[1] is True
    _publish_silver(layout, "s2", "silver-b", ["e1"])
    assert refresh_gold(layout, changed, "run-4")[1] is True
    assert stored.meta(layout, "gold", stored.RUN) == "run-4"


def test_splits_are_reused_until_silver_or_split_config_change(tmp_path):
    layout = Layout(tmp_path)
    _publish_silver(layout, "s1", "silver-a", ["e1", "e2"])
    config = SplitConfig()
    splits, rebuilt = refresh_splits(layout, config, "run-1")
    assert rebuilt and splits.height == 2
    assert refresh_splits(layout, config, "run-2")[1] is False
    assert refresh_splits(layout, SplitConfig(salt="other"), "run-3")[1] is True
    _publish_silver(layout, "s2", "silver-b", ["e1", "e2", "e3"])
    splits, rebuilt = refresh_splits(layout, SplitConfig(salt="other"), "run-4")
    assert rebuilt and splits.height == 3
