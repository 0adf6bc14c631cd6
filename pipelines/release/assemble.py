"""From the published warehouse to a release: datasets, duplicate-prompt removal, split proof,
privatization, a stable pseudo-random row order, trainability checks, content-addressed version. An
identical rebuild finds its existing release and writes nothing."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from functools import partial
from pathlib import Path

import orjson
import polars as pl

from pipelines.config.settings import Settings
from pipelines.exports.datasets import build_datasets
from pipelines.exports.datasets.common import DatasetOptions
from pipelines.gold.params import PARAMS
from pipelines.privacy.key import pseudonym_key
from pipelines.release.build.order import canonical_order, shuffled_order, survey_dataset
from pipelines.release.build.request import ReleaseRequest
from pipelines.release.build.staged import Staged
from pipelines.release.plan.inputs import record_inputs, release_for_inputs, release_inputs_digest
from pipelines.release.plan.latest import in_the_past, reuse
from pipelines.release.plan.provenance import git_commit, package_version
from pipelines.release.privatize.privatize import privatize
from pipelines.release.store.files import SPLIT_ORDER, SPLIT_PROOF
from pipelines.release.trainability.folder import trainability_problems
from pipelines.release.trainability.memo import memo_dir
from pipelines.release.trainability.problems import UntrainableRelease
from pipelines.release.write import (
    content_hash,
    existing_version,
    remove_abandoned,
    write_release,
)
from pipelines.schemas.gold import GOLD_MODELS
from pipelines.schemas.silver import SILVER_MODELS
from pipelines.splits.assign import proof_problems, split_proof
from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout
from pipelines.transforms.raw_inputs import current_raw_inputs, silver_raw_inputs


class LeakageError(RuntimeError):
    """The split proof found a group, participant or prompt in two splits: nothing is released."""


@dataclass(frozen=True)
class ReleaseOutcome:
    version: str | None  # None: nothing to release (no episode in silver), nothing written
    path: Path | None
    created: bool  # False: an identical release already existed, or nothing to release
    dropped_duplicate_prompts: dict[str, int]


NOTHING_TO_RELEASE = "nothing to release: no episodes were built (no recognised raw records)"


def nothing_to_release(layout: Layout, as_of: datetime | None = None) -> bool:
    """No episode in silver, so no dataset can hold a row: no release is written or verified."""
    if not stored.exists(layout, "silver", "episodes", as_of):
        return True
    return stored.scan(layout, "silver", "episodes", as_of).select(pl.len()).collect().item() == 0


def published_tables(
    layout: Layout, as_of: datetime | None = None
) -> tuple[dict[str, pl.DataFrame], dict[str, pl.DataFrame]]:
    """The silver and gold tables (with splits) of the snapshots in force now or at `as_of`."""
    silver = {t: stored.read(layout, "silver", t, as_of) for t in SILVER_MODELS}
    gold = {
        t: stored.read(layout, "gold", t, as_of)
        for t in GOLD_MODELS
        if stored.exists(layout, "gold", t, as_of)
    }
    return silver, gold


def drop_prompt_duplicates(
    datasets: dict[str, pl.DataFrame],
) -> tuple[dict[str, pl.DataFrame], dict[str, int]]:
    """Keep an exact prompt only in its earliest split (train, then validation, then test), across
    all datasets: a prompt trained on in `sft` must not be tested on in `kto`. Rows are whole
    examples; an rl_steps episode's steps share one `prompt_hash` (the whole episode), so an episode
    is kept or dropped whole, never cut."""
    rank = {split: i for i, split in enumerate(SPLIT_ORDER)}

    def ranked(frame: pl.DataFrame) -> pl.DataFrame:
        return frame.with_columns(
            _rank=pl.col("split").replace_strict(rank, default=len(rank), return_dtype=pl.Int32)
        )

    first = (
        pl.concat([ranked(f).select("prompt_hash", "_rank") for f in datasets.values()])
        .group_by("prompt_hash")
        .agg(pl.col("_rank").min().alias("_first"))
    )
    kept, dropped = {}, {}
    for name, frame in datasets.items():
        out = (
            ranked(frame)
            .join(first, on="prompt_hash", how="left")
            .filter(pl.col("_rank") == pl.col("_first"))
        )
        kept[name], dropped[name] = out.drop("_rank", "_first"), frame.height - out.height
    return kept, dropped


def _raw_fingerprints(layout: Layout, as_of: datetime | None = None) -> list[dict]:
    """The raw files behind the silver snapshot the release reads (then, for `as_of`); the ingest
    logs of now only for silver published before it recorded them."""
    recorded = silver_raw_inputs(layout, as_of)
    return current_raw_inputs(layout).to_dicts() if recorded is None else recorded


@dataclass(frozen=True)
class _Built:
    """The privatized datasets in release order and what the manifest says about them."""

    datasets: dict[str, pl.DataFrame]
    proof: dict
    ledger: dict[str, dict[str, int]]
    replace_ids: Callable[[list[str]], list[str]]  # each text with its subject ids replaced
    dropped: dict[str, int]
    staged: Staged | None = None


def _from_whole_tables(settings: Settings, as_of: datetime | None, key: bytes) -> _Built:
    """The datasets of tables stored whole, built in memory."""
    layout = Layout(settings.data_root)
    silver, gold = published_tables(layout, as_of)
    options = DatasetOptions.from_settings(settings)
    left_out: dict[str, dict[str, int]] = {}
    datasets, dropped = drop_prompt_duplicates(
        build_datasets(silver, gold, gold["splits"], options, left_out)
    )
    datasets = {name: canonical_order(frame) for name, frame in datasets.items()}
    proof = split_proof(gold["splits"], silver, datasets, config=settings.splits) | {
        "dropped_duplicate_prompts": dropped,
        "left_out": left_out,
    }
    _prove(proof)
    if settings.privacy.include_surveys:
        datasets = datasets | {"surveys": survey_dataset(silver["survey_answers"], gold["splits"])}
    redaction = settings.privacy.redaction
    private = privatize(datasets, silver, key, redaction, workers=settings.ingest_workers)
    released = {name: shuffled_order(name, frame) for name, frame in private.datasets.items()}
    return _Built(released, proof, private.ledger, private.replace_ids, dropped)


def _from_partitions(settings: Settings, as_of: datetime | None, key: bytes) -> _Built:
    """The datasets of tables stored in partitions, built partition by partition."""
    from pipelines.release.build.partitioned import partitioned_release, privacy_of

    params = stored.meta(Layout(settings.data_root), "gold", PARAMS, as_of)
    build_config = {
        "release": asdict(DatasetOptions.from_settings(settings)),
        "splits": settings.splits.record(),
        "params": params,
    }
    out = partitioned_release(settings, as_of, build_config, privacy_of(settings, key))
    try:
        _prove(out.proof)
    except LeakageError:
        out.staged.remove()
        raise
    return _Built({}, out.proof, out.ledger, out.replace_ids, out.dropped, out.staged)


def _prove(proof: dict) -> None:
    problems = proof_problems(proof)
    if problems:
        raise LeakageError("; ".join(problems))


def release_request(
    settings: Settings,
    raw_fingerprints: list[dict] | None = None,
    as_of: datetime | None = None,
) -> tuple[ReleaseRequest, dict[str, int]]:
    """Everything a release would contain, built from the published warehouse, now or as of a
    past time (`raw_fingerprints`: `_raw_fingerprints` of it, when the caller already read them):
    in memory from whole tables, or partition by partition (build/partitioned.py)."""
    layout = Layout(settings.data_root)
    options = DatasetOptions.from_settings(settings)
    params = stored.meta(layout, "gold", PARAMS, as_of)
    key, key_origin = pseudonym_key(settings)
    if stored.partitioned_as_of(layout, "silver", "episodes", as_of):  # the layout of then
        built = _from_partitions(settings, as_of, key)
    else:
        built = _from_whole_tables(settings, as_of, key)
    config = {
        "rewards": orjson.loads(params) if params is not None else None,
        "splits": settings.splits.record(),
        "release": asdict(options),
        **settings.release_shape(),  # card and profiles: what the card says and which configs
        "privacy": {
            "pseudonymized": True,
            "redacted": True,
            "key": key_origin.split(" ")[0],
            "include_surveys": settings.privacy.include_surveys,
            "redaction": settings.privacy.record()["redaction"],
        },
    }
    if raw_fingerprints is None:
        raw_fingerprints = _raw_fingerprints(layout, as_of)
    files = built.replace_ids([row["file"] for row in raw_fingerprints])
    fingerprints = [row | {"file": file} for row, file in zip(raw_fingerprints, files, strict=True)]
    request = ReleaseRequest(
        built.datasets,
        built.proof,
        config,
        fingerprints,
        package_version(),
        git_commit(),
        built.ledger,
        table_versions=stored.versions(layout, as_of),
        staged=built.staged,
        as_of=as_of.isoformat() if in_the_past(layout, as_of) else None,
    )
    return request, built.dropped


def _dropped_in(release: Path) -> dict[str, int]:
    return orjson.loads((release / SPLIT_PROOF).read_bytes()).get("dropped_duplicate_prompts", {})


def _trainable(folder: Path, memo: Path) -> None:
    problems = trainability_problems(folder, memo)
    if problems:
        raise UntrainableRelease(
            f"{len(problems)} trainability problems, nothing published: " + "; ".join(problems[:20])
        )


def make_release(settings: Settings, today: str, as_of: datetime | None = None) -> ReleaseOutcome:
    """Publish a new release under exports/, or return the identical one that already exists
    (without building anything when the release inputs are unchanged since the last run); with no
    episode at all, write nothing and return an outcome without a version. A new release is
    published only if its own written files pass the trainability checks; otherwise
    `UntrainableRelease` is raised and nothing is published. `as_of`: from the table snapshots
    in force at that time (`TableVersionGone` once their files are vacuumed)."""
    layout = Layout(settings.data_root)
    exports = layout.exports
    remove_abandoned(exports)
    if nothing_to_release(layout, as_of):
        return ReleaseOutcome(None, None, False, {})
    key, _ = pseudonym_key(settings)
    raw_fingerprints = _raw_fingerprints(layout, as_of)
    inputs = release_inputs_digest(settings, key, raw_fingerprints, as_of)
    unchanged = release_for_inputs(exports, inputs)
    if unchanged:
        unchanged = reuse(layout, unchanged, as_of)
        return ReleaseOutcome(
            unchanged, exports / unchanged, False, _dropped_in(exports / unchanged)
        )
    request, dropped = release_request(settings, raw_fingerprints, as_of)
    try:
        request = replace(request, input_digest=inputs)
        digest = content_hash(request)
        found = existing_version(exports, digest)
        if found:
            record_inputs(exports, inputs, found)
            found = reuse(layout, found, as_of)
            return ReleaseOutcome(found, exports / found, False, dropped)
        name = f"{today}-{digest[:10]}"
        check = partial(_trainable, memo=memo_dir(settings.data_root))
        path = write_release(exports, name, digest, request, check=check)
        record_inputs(exports, inputs, name)
        return ReleaseOutcome(name, path, True, dropped)
    finally:
        if request.staged is not None:  # its files were moved into the release, or not wanted
            request.staged.remove()
