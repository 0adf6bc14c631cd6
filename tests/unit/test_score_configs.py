"""Score configs (scores.toml): loading and its errors, each screening rule on tiny frames, the
quarantine row a rejected feedback row becomes, and the silver cache key that follows the file."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from pipelines.config.scores import SCORES_FILE, load_scores, scores_path
from pipelines.config.settings import SettingsError, settings_from_config
from pipelines.orchestration.build_record import input_parts
from pipelines.sources.raw_state import RawState
from pipelines.transforms.build import transform_scheme
from pipelines.transforms.scores import NO_FILE, screen, screened_silver
from tests.unit._gold_helpers import silver_frame

PROJECT = Path(__file__).resolve().parents[2]

REGISTRY = """
[rating]
type = "numeric"
scales = ["[-1,1]", "1-5"]
sources = ["dialogue", "decision"]
description = "a rating"

[emoji]
type = "numeric"
scales = ["count"]
categories = ["+1", "-1"]
sources = ["oasst"]
description = "emoji votes"

[judge_stance]
type = "categorical"
scales = ["category"]
range = [0.0, 1.0]
categories = ["AGREE", "REFUSE"]
sources = ["study"]
description = "a stance with its confidence"

[question_quality]
type = ["categorical", "numeric"]
scales = ["category", "[0,1]"]
categories = ["high", "low"]
sources = ["scenario"]
description = "a label, or a number written as one"
"""


@pytest.fixture
def configs(tmp_path):
    path = tmp_path / "scores.toml"
    path.write_text(REGISTRY)
    return load_scores(path)


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "scores.toml"
    path.write_text(text)
    return path


# ---------------------------------------------------------------- loading


def test_the_shipped_registry_loads_and_is_the_default(monkeypatch):
    monkeypatch.delenv("TURNLAKE_SCORES", raising=False)
    assert scores_path() == SCORES_FILE == PROJECT / "scores.toml"
    assert load_scores()["rating"].sources == ["dialogue", "decision"]


def test_turnlake_scores_points_at_another_file(tmp_path, monkeypatch):
    path = _write(tmp_path, REGISTRY)
    monkeypatch.setenv("TURNLAKE_SCORES", str(path))
    assert set(load_scores()) == {"rating", "emoji", "judge_stance", "question_quality"}


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        (  # a key the model does not have
            (
                'type = "numeric"\nscales = ["[0,1]"]\nsources = ["oasst"]\ndescription = "d"\n'
                'colour = "red"'
            ),
            "[x] colour: unknown key",
        ),
        (  # a type the scales do not imply
            'type = "numeric"\nscales = ["bool"]\nsources = ["oasst"]\ndescription = "d"',
            "[x]: type 'numeric' does not agree with scales ['bool']: those scales are boolean",
        ),
        (  # a type too many
            (
                'type = ["numeric", "text"]\nscales = ["[0,1]"]\nsources = ["oasst"]\n'
                'description = "d"'
            ),
            "[x]: type ['numeric', 'text'] does not agree with scales ['[0,1]']",
        ),
        (  # a scale outside the vocabulary
            'type = "numeric"\nscales = ["0-10"]\nsources = ["oasst"]\ndescription = "d"',
            "[x] scales.0: Input should be '[-1,1]'",
        ),
        (  # a source turnlake does not have
            'type = "numeric"\nscales = ["[0,1]"]\nsources = ["slack"]\ndescription = "d"',
            "[x] sources.0: Input should be 'scenario'",
        ),
        (
            (
                'type = "numeric"\nscales = ["[0,1]"]\nrange = [1, 0]\nsources = ["oasst"]\n'
                'description = "d"'
            ),
            "[x]: range [1.0, 0.0]: the low bound is above the high one",
        ),
        (
            (
                'type = "numeric"\nscales = ["count"]\ncategories = ["a", "a"]\n'
                'sources = ["oasst"]\ndescription = "d"'
            ),
            "[x]: categories: a category is listed twice",
        ),
        ('type = "numeric"\nscales = ["[0,1]"]\nsources = ["oasst"]', "[x] description: missing"),
    ],
)
def test_a_bad_config_is_a_settings_error_naming_the_score_and_key(tmp_path, table, expected):
    path = _write(tmp_path, f"[x]\n{table}\n")
    with pytest.raises(SettingsError) as err:
        load_scores(path)
    assert err.value.where == str(path)
    assert any(p.startswith(expected) for p in err.value.problems), err.value.problems


def test_a_file_that_is_not_toml_or_not_there_is_a_settings_error(tmp_path):
    with pytest.raises(SettingsError, match="not valid TOML"):
        load_scores(_write(tmp_path, "[rating\n"))
    with pytest.raises(SettingsError, match="cannot read the score configs"):
        load_scores(tmp_path / "missing.toml")


# ---------------------------------------------------------------- the rules


def _feedback(*rows: dict) -> pl.DataFrame:
    base = {"episode_id": "e", "target": "turn", "source_kind": "human"}
    return silver_frame(
        "feedback", [{**base, "feedback_id": f"f{i}", **row} for i, row in enumerate(rows)]
    )


def _verdicts(frame: pl.DataFrame, source: str, configs) -> list[tuple[str | None, str | None]]:
    judged = screen(frame, source, configs, "scores.toml")
    return list(zip(judged["_error_kind"], judged["_message"], strict=True))


def test_rows_that_fit_their_config_pass(configs):
    frame = _feedback(
        {"name": "rating", "value_num": -1.0, "scale": "[-1,1]"},
        {"name": "rating", "value_num": 5.0, "scale": "1-5"},
    )
    assert _verdicts(frame, "dialogue", configs) == [(None, None), (None, None)]


def test_a_name_without_config_is_not_configured(configs):
    frame = _feedback({"name": "vibe", "value_num": 1.0, "scale": "[0,1]"})
    assert _verdicts(frame, "dialogue", configs) == [
        ("not_configured", "feedback name `vibe` has no score config (scores.toml)")
    ]


def test_a_source_the_config_does_not_list_is_rejected(configs):
    frame = _feedback({"name": "rating", "value_num": 1.0, "scale": "[-1,1]"})
    assert _verdicts(frame, "study", configs) == [
        (
            "score_config",
            (
                "rating from source study is not allowed by score config `rating` (scores.toml): "
                "sources dialogue, decision"
            ),
        )
    ]


def test_a_scale_the_config_does_not_list_is_rejected(configs):
    frame = _feedback({"name": "rating", "value_num": 0.5, "scale": "[0,1]"})
    assert _verdicts(frame, "decision", configs) == [
        (
            "score_config",
            (
                "rating on scale [0,1] is not allowed by score config `rating` (scores.toml): "
                "scales [-1,1], 1-5"
            ),
        )
    ]


def test_a_value_off_its_scale_is_rejected(configs):
    frame = _feedback(
        {"name": "rating", "value_num": 7.0, "scale": "1-5"},
        {"name": "rating", "value_num": 0.5, "scale": "1-5"},
        {"name": "rating", "value_num": None, "scale": "1-5"},
        {"name": "rating", "value_num": float("nan"), "scale": "[-1,1]"},
    )
    assert _verdicts(frame, "decision", configs) == [
        ("score_config", "rating 7.0 is outside scale 1-5 of score config `rating` (scores.toml)"),
        ("score_config", "rating 0.5 is outside scale 1-5 of score config `rating` (scores.toml)"),
        (
            "score_config",
            "rating has no finite number on scale 1-5 of score config `rating` (scores.toml)",
        ),
        (
            "score_config",
            "rating has no finite number on scale [-1,1] of score config `rating` (scores.toml)",
        ),
    ]


def test_a_count_must_be_a_whole_number_of_zero_or_more(configs):
    frame = _feedback(
        {"name": "emoji", "value_num": 2.5, "value_text": "+1", "scale": "count"},
        {"name": "emoji", "value_num": -1.0, "value_text": "+1", "scale": "count"},
        {"name": "emoji", "value_num": 3.0, "value_text": "+1", "scale": "count"},
    )
    assert _verdicts(frame, "oasst", configs) == [
        (
            "score_config",
            "emoji 2.5 is not a whole number on scale count of score config `emoji` (scores.toml)",
        ),
        ("score_config", "emoji -1.0 is outside scale count of score config `emoji` (scores.toml)"),
        (None, None),
    ]


def test_a_number_outside_the_configs_own_range_is_rejected(configs):
    frame = _feedback(
        {"name": "judge_stance", "value_num": 1.5, "value_text": "AGREE", "scale": "category"},
        {"name": "judge_stance", "value_num": None, "value_text": "AGREE", "scale": "category"},
    )
    assert _verdicts(frame, "study", configs) == [
        (
            "score_config",
            (
                "judge_stance 1.5 is outside range [0.0, 1.0] of score config `judge_stance` "
                "(scores.toml)"
            ),
        ),
        (None, None),  # a stance without a confidence is still a stance
    ]


def test_a_label_outside_the_categories_is_rejected(configs):
    frame = _feedback(
        {"name": "judge_stance", "value_num": 0.9, "value_text": "MAYBE", "scale": "category"},
        {"name": "emoji", "value_num": 1.0, "value_text": "sparkles", "scale": "count"},
    )
    judged = _verdicts(frame.head(1), "study", configs) + _verdicts(frame.tail(1), "oasst", configs)
    assert judged == [
        (
            "score_config",
            (
                "judge_stance label MAYBE is not a category of score config `judge_stance` "
                "(scores.toml): categories AGREE, REFUSE"
            ),
        ),
        (
            "score_config",
            (
                "emoji label sparkles is not a category of score config `emoji` (scores.toml): "
                "categories +1, -1"
            ),
        ),
    ]


def test_a_category_needs_a_label(configs):
    frame = _feedback({"name": "question_quality", "value_text": None, "scale": "category"})
    assert _verdicts(frame, "scenario", configs) == [
        (
            "score_config",
            (
                "question_quality on scale category has no label (value_text) in score config "
                "`question_quality` (scores.toml)"
            ),
        )
    ]


def test_a_label_that_is_its_own_number_is_not_checked_against_the_categories(configs):
    frame = _feedback(
        {"name": "question_quality", "value_num": 0.25, "value_text": "0.25", "scale": "[0,1]"},
        {"name": "question_quality", "value_num": 0.25, "value_text": "0.5", "scale": "[0,1]"},
    )
    assert _verdicts(frame, "scenario", configs) == [
        (None, None),
        (
            "score_config",
            (
                "question_quality label 0.5 is not a category of score config `question_quality` "
                "(scores.toml): categories high, low"
            ),
        ),
    ]


# ---------------------------------------------------------------- quarantine rows


def test_rejected_rows_move_to_the_quarantine_with_file_locator_and_raw(configs):
    feedback = _feedback(
        {"name": "rating", "value_num": 1.0, "scale": "[-1,1]"},  # kept
        {
            "name": "rating",
            "value_num": 9.0,
            "scale": "1-5",
            "attributes": json.dumps({"file": "feedback/a.jsonl", "locator": "line 3 (byte 80)"}),
        },
        {"name": "vibe", "value_num": 1.0, "scale": "[0,1]", "episode_id": "e2"},
        {"name": "vibe", "value_num": 1.0, "scale": "[0,1]", "episode_id": "gone"},
    )
    episodes = silver_frame(
        "episodes",
        [
            {"episode_id": "e", "source": "dialogue", "source_file": "dialogues/e.jsonl"},
            {"episode_id": "e2", "source": "dialogue", "source_file": "dialogues/e2.jsonl"},
        ],
    )
    out = screened_silver(
        "dialogue", {"feedback": feedback, "episodes": episodes}, configs, "scores.toml", 40
    )
    assert out["feedback"]["feedback_id"].to_list() == ["f0"]
    assert out["episodes"].equals(episodes)
    q = out["quarantine"]
    assert q.select("source", "file", "locator", "error_kind", "stage").rows() == [
        ("dialogue", "feedback/a.jsonl", "line 3 (byte 80)", "score_config", "silver"),
        ("dialogue", "dialogues/e2.jsonl", "feedback f2", "not_configured", "silver"),
        ("dialogue", NO_FILE, "feedback f3", "not_configured", "silver"),
    ]
    assert q["raw"][1] == '{"feedback_id":"f2","episode_id":"e2","t'  # cut at 40 characters
    assert q["message"][0] == (
        "rating 9.0 is outside scale 1-5 of score config `rating` (scores.toml)"
    )


def test_a_file_named_in_the_attributes_wins_over_the_episodes(configs):
    """A decision rating event names its own file (`source_file`), which its locator points
    into; the episode's file is the decision export."""
    feedback = _feedback(
        {
            "name": "vibe",
            "value_num": 1.0,
            "scale": "[0,1]",
            "attributes": json.dumps({"source_file": "decisions/events.jsonl"}),
        }
    )
    episodes = silver_frame(
        "episodes", [{"episode_id": "e", "source": "decision", "source_file": "decisions/x.jsonl"}]
    )
    tables = {"feedback": feedback, "episodes": episodes}
    out = screened_silver("decision", tables, configs, "scores.toml", 2000)
    assert out["quarantine"]["file"].to_list() == ["decisions/events.jsonl"]
    assert out["feedback"].is_empty()
    raw = json.loads(out["quarantine"]["raw"][0])
    assert (raw["feedback_id"], raw["name"], raw["value_num"], raw["scale"]) == (
        "f0",
        "vibe",
        1.0,
        "[0,1]",
    )


def test_the_sources_own_quarantine_rows_stay_beside_the_new_ones(configs):
    before = silver_frame(
        "quarantine",
        [
            {
                "source": "dialogue",
                "file": "f",
                "locator": "l",
                "error_kind": "orphan",
                "message": "m",
                "stage": "silver",
            }
        ],
    )
    fits = _feedback({"name": "rating", "value_num": 1.0, "scale": "[-1,1]"})
    out = screened_silver(
        "dialogue", {"feedback": fits, "quarantine": before}, configs, "scores.toml", 2000
    )
    assert out["quarantine"].equals(before) and out["feedback"].equals(fits)
    unknown = _feedback({"name": "vibe", "value_num": 1.0, "scale": "[0,1]"})
    out = screened_silver(
        "dialogue", {"feedback": unknown, "quarantine": before}, configs, "scores.toml", 2000
    )
    assert out["quarantine"]["error_kind"].to_list() == ["orphan", "not_configured"]


# ---------------------------------------------------------------- the silver cache key


def test_changing_the_score_configs_changes_what_silver_is_keyed_on(tmp_path, monkeypatch):
    settings = settings_from_config(tmp_path / "raw", tmp_path / "data", PROJECT / "turnlake.toml")
    monkeypatch.setenv("TURNLAKE_SCORES", str(_write(tmp_path, REGISTRY)))
    first = transform_scheme(settings)
    reformatted = tmp_path / "same.toml"
    reformatted.write_text("# a comment only\n" + REGISTRY)
    monkeypatch.setenv("TURNLAKE_SCORES", str(reformatted))
    assert transform_scheme(settings) == first  # the configs, not the file's bytes
    narrowed = tmp_path / "narrowed.toml"
    narrowed.write_text(REGISTRY.replace('categories = ["+1", "-1"]', 'categories = ["+1"]'))
    monkeypatch.setenv("TURNLAKE_SCORES", str(narrowed))
    assert transform_scheme(settings) != first


def test_changing_the_score_configs_makes_the_next_build_run(tmp_path, monkeypatch):
    """The no-change record compares the configs: an edited scores.toml is not 'nothing
    changed'."""
    settings = settings_from_config(tmp_path / "raw", tmp_path / "data", PROJECT / "turnlake.toml")
    raw = RawState(digest="raw", n_files=0, racy=False)
    monkeypatch.setenv("TURNLAKE_SCORES", str(_write(tmp_path, REGISTRY)))
    first = input_parts(settings, raw, {})
    narrowed = tmp_path / "narrowed.toml"
    narrowed.write_text(REGISTRY.replace('categories = ["+1", "-1"]', 'categories = ["+1"]'))
    monkeypatch.setenv("TURNLAKE_SCORES", str(narrowed))
    second = input_parts(settings, raw, {})
    assert [k for k in first if first[k] != second[k]] == ["score configs"]


def test_a_rating_its_source_keeps_as_off_scale_stays_in_feedback(configs):
    """A decision rating off its dataset's configured scale is kept, marked unusable, so the
    decision rule withholds the decision's reward (docs/rewards.md); any other check still
    applies to it."""
    kept = json.dumps({"reading": "off_scale"})
    frame = _feedback(
        {"name": "rating", "value_num": 0.5, "scale": "1-5", "attributes": kept},
        {"name": "rating", "value_num": 0.5, "scale": "[0,1]", "attributes": kept},
        {"name": "rating", "value_num": 0.5, "scale": "1-5", "attributes": '{"reading": "ok"}'},
    )
    assert _verdicts(frame, "decision", configs) == [
        (None, None),
        (
            "score_config",
            (
                "rating on scale [0,1] is not allowed by score config `rating` (scores.toml): "
                "scales [-1,1], 1-5"
            ),
        ),
        ("score_config", "rating 0.5 is outside scale 1-5 of score config `rating` (scores.toml)"),
    ]
