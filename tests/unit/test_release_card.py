"""The dataset card states every rule that decides a label, a pair or an example, with the
release's settings."""

from __future__ import annotations

import tempfile
from pathlib import Path

import polars as pl

from pipelines.release.build.request import ReleaseRequest
from pipelines.release.card.render import render_card
from tests.unit._staged import staged


def card(release: dict) -> str:
    frame = pl.DataFrame({"split": ["train"], "label": [True]})
    config = {
        "release": release,
        "rewards": {"rules": {"enabled": ["dialogue_feedback@1", "decision_outcome@2"]}},
    }
    proof = {
        "left_out": {
            "kto": {"neutral_reward": 3, "no_user_turn": 1},
            "sft": {"negative_reward": 5},
        },
        "dropped_duplicate_prompts": {"rl_steps": 2},
    }
    with tempfile.TemporaryDirectory() as folder:
        request = ReleaseRequest(staged({"kto": frame}, Path(folder)), proof, config, [], "0", "a")
        return render_card(
            "20261121-0000000000",
            request,
            {"kto": [{"split": "train", "file": "train-b00000-p000.parquet", "rows": 1}]},
        )


def test_card_names_the_reward_rules_in_force():
    assert "`dialogue_feedback@1`, `decision_outcome@2`" in card({})


def test_card_states_label_and_example_rules_with_what_they_left_out():
    text = card({"kto_include_neutral": False, "sft_include_negative": False})
    assert "`label` is the sign of `reward`" in text
    assert "left out (3 rows; `[release] kto_include_neutral = true`" in text
    assert "left out (5 examples;" in text
    assert "rl_steps 2" in text and "every episode is whole" in text
    assert "stable pseudo-random order" in text


def test_card_states_the_chat_shape_mapping():
    text = card({})
    assert "The assistant opened with: " in text and "The resident's scenario: " in text
    assert "(sft 0, kto\n   1, preference 0)" in text


def test_card_follows_the_release_settings():
    text = card({"kto_include_neutral": True, "sft_include_negative": True})
    assert "kept and labelled false (`[release] kto_include_neutral = true`)" in text
    assert "kept (`[release] sft_include_negative = true`)" in text
