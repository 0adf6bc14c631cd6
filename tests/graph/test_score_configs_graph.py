"""Score configs in a real build: feedback outside its config lands in the quarantine, not in
silver feedback or gold; the shipped registry is exactly what the demo emits."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl

from pipelines.config.scores import SCORES_FILE, load_scores
from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout
from tests.graph.test_build_graph import failed_checks, materialize_all

CLEAN = Path(__file__).parents[1] / "fixtures" / "clean"
PLANTED = "feedback/support/2024-06-01.jsonl"
RATED_TURN = "dialogue:support/c-101#2"  # the clean fixtures rate it -1 (thumbs down)


def _narrowed_registry(path: Path) -> Path:
    """The shipped registry with `reward` bounded to [0, 1] and no `comment` config."""
    text = SCORES_FILE.read_text()
    reward = '[reward]\ntype = "numeric"\n'
    assert text.count(reward) == 1
    text = text.replace(reward, reward + "range = [0.0, 1.0]\n")
    start, end = text.index("[comment]\n"), text.index("[quality]\n")
    path.write_text(text[:start] + text[end:])
    return path


def test_feedback_outside_its_config_is_quarantined_and_left_out_of_gold(tmp_path, monkeypatch):
    raw = tmp_path / "raw"
    shutil.copytree(CLEAN, raw)
    event = {"event_id": "planted-1", "conversation_id": "c-101", "turn_index": 2, "reward": -0.5}
    (raw / PLANTED).write_text(json.dumps(event) + "\n")
    monkeypatch.setenv("TURNLAKE_SCORES", str(_narrowed_registry(tmp_path / "scores.toml")))

    result = materialize_all(raw, tmp_path / "data")
    assert result.success and failed_checks(result) == []

    layout = Layout(tmp_path / "data")
    quarantine = stored.read(layout, "silver", "quarantine").filter(
        pl.col("error_kind").is_in(["score_config", "not_configured"])
    )
    assert quarantine.filter(pl.col("error_kind") == "score_config").select(
        "source", "file", "locator", "message", "stage"
    ).rows() == [
        (
            "dialogue",
            PLANTED,
            "line 1 (byte 0)",
            "reward -0.5 is outside range [0.0, 1.0] of score config `reward` (scores.toml)",
            "silver",
        )
    ]
    # the clean fixtures' two comments: a name the registry no longer has
    unconfigured = quarantine.filter(pl.col("error_kind") == "not_configured")
    assert (
        unconfigured["message"].to_list()
        == ["feedback name `comment` has no score config (scores.toml)"] * 2
    )

    feedback = stored.read(layout, "silver", "feedback")
    assert feedback.filter(pl.col("name") == "comment").is_empty()
    on_turn = feedback.filter(pl.col("turn_id") == RATED_TURN)
    # its comment (unconfigured) and the planted reward are gone; the thumbs down stays
    assert on_turn.select("name", "value_num").rows() == [("rating", -1.0)]

    rewards = stored.read(layout, "gold", "turn_rewards").filter(pl.col("turn_id") == RATED_TURN)
    # the planted explicit reward would win (-0.5); without it the thumbs down maps to -0.8
    assert rewards["reward"].to_list() == [-0.8]


def test_the_shipped_registry_is_exactly_what_the_demo_emits(demo_warehouse):
    layout = Layout(demo_warehouse)
    quarantine = stored.read(layout, "silver", "quarantine")
    screened = quarantine.filter(pl.col("error_kind").is_in(["score_config", "not_configured"]))
    assert screened["message"].to_list() == []
    sources = stored.read(layout, "silver", "episodes").select("episode_id", "source")
    emitted = (
        stored.read(layout, "silver", "feedback")
        .join(sources, on="episode_id")
        .select("name", "scale", "source")
        .unique()
        .rows()
    )
    configs = load_scores(SCORES_FILE)
    outside = [
        (name, scale, source)
        for name, scale, source in emitted
        if name not in configs
        or scale not in configs[name].scales
        or source not in configs[name].sources
    ]
    assert outside == []
    # every config is one the demo uses: none is dead weight, none missing
    assert {name for name, _, _ in emitted} == set(configs)
