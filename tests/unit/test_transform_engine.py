"""What a partition's transform runs on and reuses: Polars' in-memory engine for its tables'
collects, a model's schema built once but handed out as a fresh copy, and the feedback screened
against the configs it is given."""

from __future__ import annotations

import polars as pl

from pipelines.config.scores import load_scores
from pipelines.schemas import polars_schema, silver_schema
from pipelines.schemas.silver import SILVER_MODELS
from pipelines.transforms import hh_rlhf
from pipelines.transforms.scores import screen
from pipelines.transforms.units import transform
from tests.unit._gold_helpers import silver_frame


def test_the_tables_of_a_partition_are_collected_on_the_in_memory_engine(
    monkeypatch, settings_for, tmp_path
):
    engines = []
    collect = pl.LazyFrame.collect

    def recording(self, *args, **kwargs):
        engines.append(kwargs.get("engine", "auto"))
        return collect(self, *args, **kwargs)

    def produced(bronze, settings):
        return {"episodes": pl.LazyFrame(schema=silver_schema("episodes"))}

    monkeypatch.setattr(hh_rlhf, "to_silver", produced)
    monkeypatch.setattr(pl.LazyFrame, "collect", recording)
    tables = transform("hh_rlhf", {}, settings_for(tmp_path))
    assert list(tables) == ["episodes"]
    assert tables["episodes"].height == 0
    assert engines == ["in-memory"]


def test_a_schema_handed_out_is_a_copy_the_next_caller_does_not_see_changed():
    first = silver_schema("episodes")
    assert "episode_id" in first
    del first["episode_id"]
    first["extra"] = pl.String
    again = silver_schema("episodes")
    assert "episode_id" in again
    assert "extra" not in again
    assert list(polars_schema(SILVER_MODELS["episodes"])) == list(again)


REGISTRY = """
[rating]
type = "numeric"
scales = ["[-1,1]"]
sources = ["dialogue"]
description = "a rating"
"""


def test_screening_against_other_configs_uses_those_configs(tmp_path):
    with_rating = tmp_path / "a.toml"
    with_rating.write_text(REGISTRY)
    without_rating = tmp_path / "b.toml"
    without_rating.write_text(REGISTRY.replace("[rating]", "[vibe]"))
    frame = silver_frame(
        "feedback",
        [
            {
                "feedback_id": "f0",
                "episode_id": "e",
                "target": "turn",
                "source_kind": "human",
                "name": "rating",
                "value_num": 1.0,
                "scale": "[-1,1]",
            }
        ],
    )
    fits = screen(frame, "dialogue", load_scores(with_rating), "scores.toml")
    assert fits["_error_kind"].to_list() == [None]
    # the first configs must not answer for the second
    unknown = screen(frame, "dialogue", load_scores(without_rating), "scores.toml")
    assert unknown["_error_kind"].to_list() == ["not_configured"]
    assert unknown["_message"].to_list() == [
        "feedback name `rating` has no score config (scores.toml)"
    ]
