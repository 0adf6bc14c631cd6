"""From the published warehouse to a release: datasets, duplicate-prompt removal, split proof,
privatization, a stable pseudo-random row order, trainability checks, content-addressed version. An
identical rebuild finds its existing release and writes nothing."""

from __future__ import annotations

import subprocess
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import orjson
import polars as pl

from pipelines.config.settings import SOURCES, Settings
from pipelines.exports.datasets import build_datasets
from pipelines.exports.datasets.common import DatasetOptions, sha256_hex
from pipelines.gold.params import PARAMS
from pipelines.ingest.log import read_log
from pipelines.release.files import SPLIT_ORDER, SPLIT_PROOF
from pipelines.release.inputs import record_inputs, release_for_inputs, release_inputs_digest
from pipelines.release.privatize import privatize, pseudonym_key
from pipelines.release.redaction_memo import load_memo, memo_fingerprint, save_memo
from pipelines.release.request import ReleaseRequest
from pipelines.release.row_ids import ROW_ID
from pipelines.release.trainability import UntrainableRelease, trainability_problems
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


def _flat_columns(frame: pl.DataFrame) -> list[str]:
    return [c for c, t in frame.schema.items() if not isinstance(t, (pl.List, pl.Struct, pl.Array))]


def canonical_order(frame: pl.DataFrame) -> pl.DataFrame:
    """Rows sorted by every flat column, so the release's bytes (and version) do not depend on the
    order joins and group-bys happened to produce (the tie-breaker of `shuffled_order`)."""
    flat = _flat_columns(frame)
    return frame.sort(flat, nulls_last=True, maintain_order=True) if flat else frame


def shuffled_order(name: str, frame: pl.DataFrame) -> pl.DataFrame:
    """Rows in a stable pseudo-random order: by sha256 of the row id (ROW_ID), so trainers that
    read in order see every source mixed, and a row keeps its place relative to the others when
    rows are added. Ties (equal ids) keep the order they come in, which `canonical_order` made
    deterministic."""
    columns = [c for c in ROW_ID.get(name, ()) if c in frame.columns] or _flat_columns(frame)
    if not columns or frame.height == 0:
        return frame
    row_id = pl.concat_str(
        [pl.col(c).cast(pl.String).fill_null("") for c in columns], separator="\x1f"
    )
    ids = frame.select(row_id.alias("_id")).unique()
    ids = ids.with_columns(_order=sha256_hex(pl.col("_id")))
    keys = ["_order", "step"] if name == "rl_steps" and "step" in frame.columns else ["_order"]
    ordered = frame.with_columns(_id=row_id).join(ids, on="_id", how="left", maintain_order="left")
    return ordered.sort(keys, maintain_order=True).drop("_id", "_order")


def survey_dataset(answers: pl.DataFrame, splits: pl.DataFrame) -> pl.DataFrame:
    """Survey answers with the split of their participant's group (study groups are
    participants)."""
    return (
        answers.drop("source_file")
        .join(
            splits.select("group_id", "split"),
            left_on="participant_id",
            right_on="group_id",
            how="inner",
        )
        .with_columns(group_id=pl.col("participant_id"))
    )


def _git_commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).parent,
            timeout=10,
        )
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _package_version() -> str:
    try:
        return version("turnlake")
    except PackageNotFoundError:
        return "unknown"


def _raw_fingerprints(layout: Layout) -> list[dict]:
    logs = pl.concat([read_log(layout, s) for s in SOURCES]).filter(
        pl.col("missing_since").is_null()
    )
    return logs.select("source", "file", "fingerprint").sort("source", "file").to_dicts()


def release_request(
    settings: Settings,
    raw_fingerprints: list[dict] | None = None,
    as_of: datetime | None = None,
) -> tuple[ReleaseRequest, dict[str, int]]:
    """Everything a release would contain, built in memory from the published warehouse, now or
    as of a past time (`raw_fingerprints`: `_raw_fingerprints` of it, when the caller already
    read them)."""
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
    problems = proof_problems(proof)
    if problems:
        raise LeakageError("; ".join(problems))
    params = stored.meta(layout, "gold", PARAMS, as_of)
    key, key_origin = pseudonym_key(settings)
    include_surveys = settings.privacy.include_surveys
    if include_surveys:
        datasets = datasets | {"surveys": survey_dataset(silver["survey_answers"], gold["splits"])}
    redaction = settings.privacy.redaction
    memo_id = memo_fingerprint(redaction)
    memo = load_memo(settings.data_root, key, memo_id)
    private = privatize(datasets, silver, key, redaction, memo, workers=settings.ingest_workers)
    save_memo(memo, settings.data_root, memo_id)
    released = {name: shuffled_order(name, frame) for name, frame in private.datasets.items()}
    config = {
        "rewards": orjson.loads(params) if params is not None else None,
        "splits": asdict(settings.splits),
        "release": asdict(options),
        **settings.release_shape(),  # card and profiles: what the card says and which configs
        "privacy": {
            "pseudonymized": True,
            "redacted": True,
            "key": key_origin.split(" ")[0],
            "include_surveys": include_surveys,
            "redaction": settings.privacy.record()["redaction"],
        },
    }
    if raw_fingerprints is None:
        raw_fingerprints = _raw_fingerprints(layout)
    fingerprints = [row | {"file": private.replace_ids(row["file"])} for row in raw_fingerprints]
    request = ReleaseRequest(
        released, proof, config, fingerprints, _package_version(), _git_commit(), private.ledger
    )
    request = replace(request, table_versions=stored.versions(layout, as_of))
    return request, dropped


def _dropped_in(release: Path) -> dict[str, int]:
    return orjson.loads((release / SPLIT_PROOF).read_bytes()).get("dropped_duplicate_prompts", {})


def _trainable(folder: Path) -> None:
    problems = trainability_problems(folder)
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
    exports = Layout(settings.data_root).exports
    remove_abandoned(exports)
    if nothing_to_release(Layout(settings.data_root), as_of):
        return ReleaseOutcome(None, None, False, {})
    key, _ = pseudonym_key(settings)
    raw_fingerprints = _raw_fingerprints(Layout(settings.data_root))
    inputs = release_inputs_digest(settings, key, raw_fingerprints, as_of)
    unchanged = release_for_inputs(exports, inputs)
    if unchanged:
        return ReleaseOutcome(
            unchanged, exports / unchanged, False, _dropped_in(exports / unchanged)
        )
    request, dropped = release_request(settings, raw_fingerprints, as_of)
    request = replace(request, input_digest=inputs)
    digest = content_hash(request)
    found = existing_version(exports, digest)
    if found:
        record_inputs(exports, inputs, found)
        return ReleaseOutcome(found, exports / found, False, dropped)
    name = f"{today}-{digest[:10]}"
    path = write_release(exports, name, digest, request, check=_trainable)
    record_inputs(exports, inputs, name)
    return ReleaseOutcome(name, path, True, dropped)
