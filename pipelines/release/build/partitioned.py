"""The datasets, split proof and redaction ledger of a release (parts.py builds and privatizes them
partition by partition; staged.py puts them in release order and writes their files one file slice
at a time). The rows do not depend on how groups were cut into partitions, and their order is the
release's stable pseudo-random order with ties broken by the privatized rows' own values, so 1 and
8 shards, or tables an earlier version stored whole (one partition), give the same rows and
content hash."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

import orjson
import polars as pl

from pipelines.config.settings import Settings
from pipelines.exports.datasets.common import DatasetOptions
from pipelines.gold.params import shipped_params
from pipelines.gold.step_labels import StepLabels
from pipelines.partitions.assign import MAP_SCHEMA, PARTITION
from pipelines.partitions.store import MAP_TABLE
from pipelines.privacy.key import key_fingerprint
from pipelines.release.build import datasets
from pipelines.release.build.batch_files import previous_files
from pipelines.release.build.order import survey_dataset
from pipelines.release.build.parts import Privacy, keyed_units, release_parts
from pipelines.release.build.schemas import configured_splits, dataset_schemas
from pipelines.release.build.staged import BATCH, Source, Staged, slice_index, stage
from pipelines.release.privatize.decontaminated import eval_sets, proof_part
from pipelines.release.privatize.partitions import redaction_fingerprint
from pipelines.release.privatize.privatize import privatize
from pipelines.release.store import part_cache
from pipelines.release.store.files import SPLIT_ORDER
from pipelines.splits.assign import split_proof, stored_near_duplicates
from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout
from pipelines.storage.uri import is_remote

SLICE = "_slice"  # a survey row's file slice index, until its sources are cut


@dataclass(frozen=True)
class PartitionedRelease:
    staged: Staged  # the datasets' files, written batch by batch (staged.py)
    proof: dict
    dropped: dict[str, int]
    ledger: dict[str, dict[str, int]]
    replace_ids: Callable[[list[str]], list[str]]


def _surveys(layout: Layout, as_of: datetime | None, splits: pl.DataFrame) -> pl.DataFrame:
    """The survey dataset (survey answers are stored whole) with each row's landing batch and file
    slice index (staged.py: the split is the row's; batch 0, slice 0 without a partition map)."""
    answers = stored.read(layout, "silver", "survey_answers", as_of)
    placed = stored.read(layout, "silver", MAP_TABLE, as_of, schema=MAP_SCHEMA).select(
        "group_id",
        pl.col("batch").alias(BATCH),
        slice_index(pl.col(PARTITION)).alias(SLICE),
    )
    frame = survey_dataset(answers, splits)
    return frame.join(placed, on="group_id", how="left").with_columns(
        pl.col(BATCH).fill_null(0), pl.col(SLICE).fill_null(0)
    )


def partitioned_release(
    settings: Settings,
    as_of: datetime | None,
    build_config: dict,
    privacy: Privacy,
) -> PartitionedRelease:
    """Everything `assemble.release_request` needs from the datasets, built per partition."""
    layout = Layout(settings.data_root)
    # the step-label rule is the one of the gold parameters the release is built with (the shipped
    # rules file for gold stored before it recorded them)
    params = build_config.get("params")
    labels = StepLabels.from_params(orjson.loads(params) if params else shipped_params())
    options = replace(DatasetOptions.from_settings(settings), step_labels=labels)
    evals = eval_sets(settings)
    keyed = keyed_units(layout, as_of, build_config, options, evals)
    dropped = datasets.dropped_counts(keyed.keys)
    duplicates = datasets.duplicate_row_counts(keyed.keys)
    proven = datasets.proof_frames(keyed.keys)
    # the split proof reads its own frames and privatizing each row's keep flag: the whole key
    # frame is let go before either
    keyed = keyed.privatizing()
    splits = stored.read(layout, "gold", "splits", as_of)
    episodes = (
        stored.scan(layout, "silver", "episodes", as_of)
        .select("episode_id", "group_id", "source")
        .collect()
    )
    proof = split_proof(
        splits,
        {"episodes": episodes},
        proven,
        config=settings.splits,
        participants=keyed.participants,
        near_duplicates=stored_near_duplicates(layout, settings.splits, as_of),
    ) | {
        "dropped_duplicate_prompts": dropped,
        "dropped_duplicate_rows": duplicates,
        "left_out": datasets.summed_left_out(keyed.metas),
    }
    proof |= proof_part(evals, keyed.decontaminated)
    del episodes, proven
    parts = release_parts(layout, keyed, privacy)
    del keyed
    sources, ledger = dict(parts.sources), dict(parts.ledger)
    if settings.privacy.include_surveys:
        surveys = privatize(
            {"surveys": _surveys(layout, as_of, splits)},
            {},
            privacy.key,
            privacy.redaction,
            workers=privacy.workers,
            ids=parts.ids,
        )
        sources["surveys"] = _batches_of(surveys.datasets["surveys"])
        ledger["surveys"] = surveys.ledger["surveys"]
    exports = layout.exports
    previous = {} if is_remote(exports) else previous_files(exports)
    splits = configured_splits(settings.splits.ratios, SPLIT_ORDER)
    store = part_cache.cache_root(layout)
    staged = stage(sources, stage_folder(layout), previous, splits, dataset_schemas, store)
    part_cache.prune(store, [*parts.entries, *staged.entries])
    return PartitionedRelease(
        staged, proof, dropped, ledger, parts.replace_ids(privacy.key).replace_many
    )


def stage_folder(layout: Layout) -> Path:
    """Where a release's files are staged (local, under the engine's state, never released)."""
    return layout.release_stage


def _batches_of(frame: pl.DataFrame) -> list[Source]:
    """A frame held whole (the survey answers) as one source per file slice of its rows."""
    cuts = sorted(set(frame.select(BATCH, SLICE).iter_rows())) or [(0, 0)]
    schema = frame.drop(SLICE).schema  # no rows: still its schema
    return [
        Source(
            batch,
            schema,
            lambda b=batch, i=index: frame.filter((pl.col(BATCH) == b) & (pl.col(SLICE) == i)).drop(
                SLICE
            ),
            index,
        )
        for batch, index in cuts
    ]


def privacy_of(settings: Settings, key: bytes) -> Privacy:
    redaction = settings.privacy.redaction
    return Privacy(
        key,
        key_fingerprint(key),
        redaction,
        redaction_fingerprint(redaction),
        settings.ingest_workers,
    )
