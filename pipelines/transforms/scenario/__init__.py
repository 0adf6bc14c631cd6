"""Scenario dialogs: bronze `scenario_entries` / `scenario_metadata` → silver tables.

One episode per scenario; of several copies of a scenario (state folders) one file is chosen, and
each entry yields a moderator and a user turn in order (`entries`). A user reply answers, and may
correct, the moderator turn before it; a repeated checkpoint message revises the earlier one
(`corrections`). Turns carry non-judgement facts and an honest response time; episodes carry the
chosen file's state, other copies and metadata (`turns`). Outcome signals become feedback on the
turn they judge (`feedback`). A user decision becomes a decisions row whose `suggestion_followed`
compares decision and proposal by meaning (`decisions`).
"""

from __future__ import annotations

import polars as pl

from pipelines.config.settings import Settings
from pipelines.transforms.polars_engine import TRANSFORM_ENGINE
from pipelines.transforms.scenario.decisions import build_contexts, build_decisions
from pipelines.transforms.scenario.entries import choose_files, final_metadata, with_turn_positions
from pipelines.transforms.scenario.feedback import entry_feedback, metadata_feedback
from pipelines.transforms.scenario.turns import build_episodes, build_turns

__all__ = ["to_silver"]


def to_silver(bronze: dict[str, pl.LazyFrame], settings: Settings) -> dict[str, pl.LazyFrame]:
    """The silver plans of one partition's scenarios. The chosen files, their entries (with turn
    positions) and final metadata are collected once: every table reads them, and a lazy frame
    read by several collected plans is computed again in each (a `collect_all` of the tables
    shares none of it either)."""
    chosen = (
        choose_files(bronze["scenario_entries"], bronze["scenario_metadata"])
        .collect(engine=TRANSFORM_ENGINE)
        .lazy()
    )
    entries, metadata = (
        frame.lazy()
        for frame in pl.collect_all(
            [
                with_turn_positions(
                    bronze["scenario_entries"].join(
                        chosen.select("scenario_id", "file"), on=["scenario_id", "file"], how="semi"
                    )
                ),
                final_metadata(bronze["scenario_metadata"], chosen),
            ],
            engine=TRANSFORM_ENGINE,
        )
    )
    return {
        "episodes": build_episodes(chosen, entries, metadata),
        "turns": build_turns(entries),
        "feedback": pl.concat(
            [entry_feedback(entries), metadata_feedback(metadata)], how="diagonal"
        ),
        "decisions": build_decisions(entries),
        "contexts": build_contexts(entries),
    }
