"""The datasets, split proof and redaction ledger of a release whose tables are stored in
partitions (part_release.py builds and privatizes them partition by partition). The rows are the
rows a release from whole tables would hold; their order is the release's stable pseudo-random
order with ties broken by the privatized rows' own values, so it does not depend on how groups
were cut into partitions (1 and 8 shards give the same release)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

import polars as pl

from pipelines.config.settings import Settings
from pipelines.exports.datasets.common import DatasetOptions
from pipelines.partitions.store import MAP_TABLE
from pipelines.release import part_build, part_cache
from pipelines.release.assemble_order import canonical_order, shuffled_order, survey_dataset
from pipelines.release.inputs import key_fingerprint
from pipelines.release.part_release import BATCH, Privacy, release_parts
from pipelines.release.privatize import privatize
from pipelines.release.redaction_memo import RedactionMemo
from pipelines.splits.assign import split_proof
from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout


@dataclass(frozen=True)
class PartitionedRelease:
    datasets: dict[str, pl.DataFrame]  # privatized, in release order
    batches: dict[str, pl.Series]  # each dataset's rows' landing batch, row by row
    proof: dict
    dropped: dict[str, int]
    ledger: dict[str, dict[str, int]]
    replace_ids: Callable[[str], str]


def _surveys(layout: Layout, as_of: datetime | None, splits: pl.DataFrame) -> pl.DataFrame:
    """The survey dataset (survey answers are stored whole) with each row's landing batch."""
    answers = stored.read(layout, "silver", "survey_answers", as_of)
    batches = stored.read(layout, "silver", MAP_TABLE, as_of).select("group_id", BATCH="batch")
    frame = survey_dataset(answers, splits)
    return frame.join(batches.rename({"BATCH": BATCH}), on="group_id", how="left").with_columns(
        pl.col(BATCH).fill_null(0)
    )


def partitioned_release(
    settings: Settings,
    as_of: datetime | None,
    build_config: dict,
    privacy: Privacy,
) -> PartitionedRelease:
    """Everything `assemble.release_request` needs from the datasets, built per partition."""
    layout = Layout(settings.data_root)
    options = DatasetOptions.from_settings(settings)
    parts = release_parts(layout, as_of, build_config, options, privacy)
    dropped = part_build.dropped_counts(parts.keys)
    splits = stored.read(layout, "gold", "splits", as_of)
    episodes = (
        stored.scan(layout, "silver", "episodes", as_of)
        .select("episode_id", "group_id", "source")
        .collect()
    )
    proof = split_proof(
        splits,
        {"episodes": episodes},
        part_build.proof_frames(parts.keys),
        config=settings.splits,
        participants=parts.participants,
    ) | {"dropped_duplicate_prompts": dropped, "left_out": parts.left_out}
    datasets, ledger = parts.datasets, dict(parts.ledger)  # emptied below, once ordered
    if settings.privacy.include_surveys:
        surveys = privatize(
            {"surveys": _surveys(layout, as_of, splits)},
            {},
            privacy.key,
            privacy.redaction,
            privacy.memo,
            privacy.workers,
            ids=parts.ids,
        )
        datasets["surveys"], ledger["surveys"] = (
            surveys.datasets["surveys"],
            surveys.ledger["surveys"],
        )
    ordered = {}
    for name in list(datasets):  # popped: memory holds one dataset's unordered rows, not all
        ordered[name] = shuffled_order(name, canonical_order(datasets.pop(name)))
    part_cache.prune(part_cache.cache_root(layout), parts.entries)
    return PartitionedRelease(
        {name: frame.drop(BATCH) for name, frame in ordered.items()},
        {name: frame.get_column(BATCH) for name, frame in ordered.items()},
        proof,
        dropped,
        ledger,
        parts.replace_ids(privacy.key).replace,
    )


def privacy_of(settings: Settings, key: bytes, memo: RedactionMemo, memo_id: str) -> Privacy:
    return Privacy(
        key,
        key_fingerprint(key),
        settings.privacy.redaction,
        memo,
        memo_id,
        settings.ingest_workers,
    )
