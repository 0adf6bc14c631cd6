"""Decision time travel: list the decisions of the `decision` source, inspect one in full, and
write replay sets with another persona. Reads what the last build published; writes nothing
under the data root."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from pipelines.api.errors import BadPersonaFile, BadRatingValue, NotBuilt, UnknownDecision
from pipelines.api.roots import PathLike, resolve_settings
from pipelines.decisions.filters import DecisionFilter
from pipelines.storage.layout import Layout

__all__ = [
    "DecisionFilter",
    "ReplaySet",
    "compare_replays",
    "decision_index",
    "inspect_decision",
    "list_decisions",
    "rate_decision",
    "replay_decisions",
]
DEFAULT_REPLAY_MODEL = "gpt-4o-mini"


@dataclass(frozen=True)
class ReplaySet:
    """What `replay_decisions` wrote: the persona's name, how many decisions, which files."""

    persona: str
    n_decisions: int
    files: list[Path]


def decision_index(
    *, raw_root: PathLike | None = None, data_root: PathLike | None = None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(every decision with its released prompt, silver feedback). Raises `NotBuilt`."""
    from pipelines.decisions.catalog import decision_index as index_of
    from pipelines.decisions.tables import built, read_decision_tables

    settings = resolve_settings(raw_root=raw_root, data_root=data_root)
    layout = Layout(settings.data_root)
    if not built(layout, "silver", "gold"):
        raise NotBuilt("no silver and gold tables yet: run `turnlake build` first")
    silver, gold = read_decision_tables(layout)
    return index_of(silver, gold, settings.privacy.redaction.kinds), silver["feedback"]


def list_decisions(
    wanted: DecisionFilter | None = None,
    *,
    raw_root: PathLike | None = None,
    data_root: PathLike | None = None,
) -> pl.DataFrame:
    """The decisions passing `wanted` (all without it), oldest first, with their prompts."""
    from pipelines.decisions.filters import select_decisions

    index, _ = decision_index(raw_root=raw_root, data_root=data_root)
    return select_decisions(index, wanted or DecisionFilter())


def inspect_decision(
    decision_id: str, *, raw_root: PathLike | None = None, data_root: PathLike | None = None
) -> dict[str, Any]:
    """One decision in full (see `pipelines.decisions.inspect`), plus its ingested `replays`;
    `messages` is the prompt the release holds for it. Raises `UnknownDecision` or `NotBuilt`."""
    from pipelines.decisions.inspect import inspect_decision as view_of
    from pipelines.decisions.tables import read_replays

    index, feedback = decision_index(raw_root=raw_root, data_root=data_root)
    rows = index.filter(pl.col("decision_id") == decision_id)
    if rows.height == 0:
        raise UnknownDecision(f"no decision {decision_id!r} in the built tables")
    view = view_of(rows.row(0, named=True), feedback)
    layout = Layout(resolve_settings(raw_root=raw_root, data_root=data_root).data_root)
    replays = read_replays(layout).filter(pl.col("decision_id") == decision_id).sort("persona")
    view["replays"] = replays.select(
        "persona", "model", "action", "confidence", "reasoning", "response", "agrees"
    ).to_dicts()
    return view


def replay_decisions(
    persona: PathLike,
    to: PathLike,
    wanted: DecisionFilter | None = None,
    *,
    model: str = DEFAULT_REPLAY_MODEL,
    raw_root: PathLike | None = None,
    data_root: PathLike | None = None,
) -> ReplaySet:
    """Write a replay set of the decisions passing `wanted` with the persona in file `persona`
    (see `pipelines.decisions.persona`) under folder `to`: `<persona>.batch.jsonl` (OpenAI
    chat batch input, `custom_id` = decision id, `body.model` = `model`) and `<persona>.parquet`.
    No model is called. Raises `BadPersonaFile`, `NotBuilt`."""
    from pipelines.decisions.persona import BadPersona, read_persona
    from pipelines.decisions.replay import replay_rows, write_replay_set
    from pipelines.decisions.tables import read_decision_tables

    try:
        chosen = read_persona(Path(persona))
    except BadPersona as exc:
        raise BadPersonaFile(str(exc)) from None
    selected = list_decisions(wanted, raw_root=raw_root, data_root=data_root)
    settings = resolve_settings(raw_root=raw_root, data_root=data_root)
    silver, gold = read_decision_tables(Layout(settings.data_root))
    kinds = settings.privacy.redaction.kinds
    rows = replay_rows(silver, gold, selected["decision_id"].to_list(), chosen, kinds)
    files = write_replay_set(rows, chosen, model, Path(to))
    return ReplaySet(chosen.name, rows.height, files)


def rate_decision(
    decision_id: str,
    rating: float,
    *,
    scale: str = "1-5",
    rated_by: str = "user",
    reason: str | None = None,
    raw_root: PathLike | None = None,
    data_root: PathLike | None = None,
) -> Path:
    """Append a rating of a built decision to `<raw root>/ratings/ratings.jsonl` (the next build
    reads it as feedback, with its own time stamp); returns the file. A later rating by the same
    rater kind supersedes this one (docs/rewards.md). Raises `UnknownDecision`, `BadRatingValue`,
    `NotBuilt`."""
    from pipelines.decisions.rate import BadRating, append_event, rating_event

    try:
        event = rating_event(decision_id, rating, scale, rated_by, reason)
    except BadRating as exc:
        raise BadRatingValue(str(exc)) from None
    index, _ = decision_index(raw_root=raw_root, data_root=data_root)
    if index.filter(pl.col("decision_id") == decision_id).height == 0:
        raise UnknownDecision(f"no decision {decision_id!r} in the built tables")
    settings = resolve_settings(raw_root=raw_root, data_root=data_root)
    return append_event(settings.raw_root, event)


def compare_replays(
    persona: str | None = None,
    *,
    raw_root: PathLike | None = None,
    data_root: PathLike | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(per decision the original action beside each persona's, agreement rate per persona and
    domain), over the ingested replay results (only `persona`'s when given). Raises `NotBuilt`."""
    from pipelines.decisions.compare import actions_side_by_side, agreement_rates
    from pipelines.decisions.tables import built, read_replays

    layout = Layout(resolve_settings(raw_root=raw_root, data_root=data_root).data_root)
    if not built(layout, "silver"):
        raise NotBuilt("no silver tables yet: run `turnlake build` first")
    replays = read_replays(layout)
    if persona is not None:
        replays = replays.filter(pl.col("persona") == persona)
    return actions_side_by_side(replays), agreement_rates(replays)
