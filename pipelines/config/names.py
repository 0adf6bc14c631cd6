"""The names every layer shares and the settings are checked against: the raw sources turnlake
reads, in the order they are built, and the datasets a release can hold (release/card/columns.py
describes each one's columns). Imports nothing, so the settings, the schemas and the release
can all use it."""

from __future__ import annotations

SOURCES: tuple[str, ...] = (
    "scenario",
    "study",
    "social_rl",
    "dialogue",
    "decision",
    "oasst",
    "hh_rlhf",
)
RELEASED_DATASETS: tuple[str, ...] = (
    "sft",
    "preference",
    "kto",
    "rl_steps",
    "decisions",
    "stepwise",
    "surveys",
)
