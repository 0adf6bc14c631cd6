"""What each blocking check concludes from the data it reads: a pass or a failure with counts.

Pure functions (no Dagster); pipelines/checks/factory.py attaches them to assets.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from pipelines.config.settings import Settings
from pipelines.runtime.text_tables import markdown_table
from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout

# the silver tables the split proof reads, and their only columns it reads
SPLIT_COLUMNS = {
    "episodes": ("episode_id", "group_id", "source"),
    "turns": ("episode_id", "role", "actor_id"),
    "decisions": ("episode_id", "actor_type", "actor_id"),
    "feedback": ("episode_id", "source_kind", "attributes"),
}
SPLIT_SILVER = tuple(SPLIT_COLUMNS)
REWARD_COLUMNS = ("reward_id", "feedback_ids", "reward", "reward_rule")


class Markdown(str):
    """Metadata text to show as markdown (the Dagster layer renders it)."""


@dataclass(frozen=True)
class Passes:
    """What a contract passed, to be recorded once its step has judged (checks/partitioned.py):
    beside `layer`'s partition record (silver, gold, splits), or, for a bronze table, in the
    ingest log of its `source`; `passed`: partition (or bronze part id) → digest it passed with."""

    layer: str  # the table's home layer, or "bronze"
    table: str
    passed: dict[str, str]
    source: str = ""  # a bronze table's
    read: int = 0  # partitions or parts read now (none: what passed is what was recorded)


@dataclass(frozen=True)
class Verdict:
    passed: bool
    metadata: dict[str, Any] = field(default_factory=dict)
    passes: Passes | None = None  # a contract's: what it passed, to remember


def _columns(layout: Layout, layer: str, table: str, columns: Iterable[str]) -> pl.DataFrame:
    """Only `columns` of a table (a cross-table rule reads keys, never the texts), so such a
    check holds a few columns of the corpus, not its rows."""
    return stored.scan(layout, layer, table).select(list(dict.fromkeys(columns))).collect()


def nothing_lost(source: str, settings: Settings) -> Verdict:
    """Per raw file: records read == bronze rows + quarantine rows."""
    from pipelines.ingest.reconcile import reconcile_source, reconciliation_totals

    per_file = reconcile_source(source, Layout(settings.data_root))
    bad = per_file.filter(~pl.col("balanced"))
    metadata: dict[str, Any] = dict(reconciliation_totals(per_file))
    if bad.height:
        metadata["unbalanced"] = Markdown(markdown_table(bad.head(20), max_chars=80))
    return Verdict(bad.height == 0, metadata)


def references_resolve(settings: Settings) -> Verdict:
    from pipelines.schemas.integrity import REFERENCES, dangling_references
    from pipelines.schemas.silver import SILVER_MODELS

    layout = Layout(settings.data_root)
    columns: dict[str, list[str]] = {t: [] for t in SILVER_MODELS}
    for child, column, parent, key in REFERENCES:
        columns[child].append(column)
        columns[parent].append(key)
    used = {t: _columns(layout, "silver", t, c) for t, c in columns.items() if c}
    problems = dangling_references(used)
    return Verdict(not problems, dict(problems))


def rewards_traceable(settings: Settings) -> Verdict:
    from pipelines.gold.provenance import reward_problems

    layout = Layout(settings.data_root)
    rewards = _columns(layout, "gold", "turn_rewards", REWARD_COLUMNS)
    problems = reward_problems(rewards, _columns(layout, "silver", "feedback", ["feedback_id"]))
    return Verdict(not problems, {"rows": rewards.height, **problems})


def splits_leak_free(settings: Settings) -> Verdict:
    from pipelines.splits.assign import proof_problems, split_proof, stored_near_duplicates

    layout = Layout(settings.data_root)
    silver = {t: _columns(layout, "silver", t, c) for t, c in SPLIT_COLUMNS.items()}
    splits = stored.read(layout, "gold", "splits")
    if splits.height == 0 and silver["episodes"].height == 0:
        return Verdict(True, {"groups": 0, "note": "no episodes, so no groups to split"})
    near = stored_near_duplicates(layout, settings.splits)
    proof = split_proof(splits, silver, {}, settings.splits, near_duplicates=near)  # and ratios
    problems = proof_problems(proof)
    metadata = {f"groups_{k}": v for k, v in proof["groups_per_split"].items()}
    metadata |= {f"participants_{k}": v for k, v in proof["participants_per_split"].items()}
    metadata |= {f"{k}_overlap": v["count"] for k, v in proof["overlaps"].items()}
    if problems:
        metadata["problems"] = "; ".join(problems)[:2000]
    return Verdict(not problems, metadata)


def _judge_latest_release(settings: Settings, problems_of: Callable[[Path], list[str]]) -> Verdict:
    """`problems_of` the latest release; with no episode at all there is nothing to release,
    which passes."""
    from pipelines.release.assemble import NOTHING_TO_RELEASE, nothing_to_release
    from pipelines.release.store.fetch import local_release
    from pipelines.release.store.files import latest_release

    layout = Layout(settings.data_root)
    version = latest_release(layout.exports)
    if version is None and nothing_to_release(layout):
        return Verdict(
            True, {"version": "none", "problems": 0, "first_problems": NOTHING_TO_RELEASE}
        )
    problems = ["no complete release"]
    if version:
        with local_release(layout.release(version)) as folder:
            problems = problems_of(folder)
    return Verdict(
        not problems,
        {
            "version": str(version),
            "problems": len(problems),
            "first_problems": "; ".join(problems[:5])[:2000],
        },
    )


def release_verifies(settings: Settings) -> Verdict:
    from pipelines.release.store.verify import verify_release

    return _judge_latest_release(settings, verify_release)


def _trainability_problems(release: Path) -> list[str]:
    """What the release's record says when it still holds for its files (each is hashed: the
    bytes checked before publishing), else its files checked again: a release made before
    releases carried the record, files rewritten since, or a `--revalidate` run."""
    from pipelines.checks.revalidate import revalidate_requested
    from pipelines.release.trainability.folder import trainability_problems
    from pipelines.release.trainability.record import recorded_problems

    recorded = None if revalidate_requested() else recorded_problems(release)
    return trainability_problems(release) if recorded is None else recorded


def release_is_trainable(settings: Settings) -> Verdict:
    return _judge_latest_release(settings, _trainability_problems)
