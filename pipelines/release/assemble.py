"""From the published warehouse to a release: datasets, duplicate-prompt removal, split proof,
privatization, a stable pseudo-random row order, trainability checks, content-addressed version. An
identical rebuild finds its existing release and writes nothing."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from functools import partial
from pathlib import Path

import orjson
import polars as pl

from pipelines.config.settings import Settings
from pipelines.exports.datasets.common import DatasetOptions
from pipelines.exports.minari import FORMAT_VERSION as MINARI_FORMAT
from pipelines.exports.openai import FORMAT_VERSION as OPENAI_FORMAT
from pipelines.gold.agreement import stored_agreement
from pipelines.gold.params import PARAMS
from pipelines.privacy.key import pseudonym_key
from pipelines.release.build.partitioned import partitioned_release, privacy_of
from pipelines.release.build.request import ReleaseRequest
from pipelines.release.build.staged import Staged
from pipelines.release.plan.latest import in_the_past, reuse
from pipelines.release.plan.provenance import git_commit, package_version
from pipelines.release.privatize.decontaminated import config_part
from pipelines.release.trainability.folder import Findings, release_findings
from pipelines.release.trainability.problems import UntrainableRelease
from pipelines.release.trainability.record import earlier_findings
from pipelines.release.write import (
    content_hash,
    existing_version,
    remove_abandoned,
    write_release,
)
from pipelines.splits.assign import proof_problems
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


def _raw_fingerprints(layout: Layout, as_of: datetime | None = None) -> list[dict]:
    """The raw files behind the silver snapshot the release reads (then, for `as_of`); the ingest
    logs of now only for silver published before it recorded them."""
    recorded = silver_raw_inputs(layout, as_of)
    return current_raw_inputs(layout).to_dicts() if recorded is None else recorded


@dataclass(frozen=True)
class _Built:
    """The privatized datasets, staged in release order, and what the manifest says about them."""

    staged: Staged
    proof: dict
    ledger: dict[str, dict[str, int]]
    replace_ids: Callable[[list[str]], list[str]]  # each text with its subject ids replaced
    dropped: dict[str, int]


def _built(settings: Settings, as_of: datetime | None, key: bytes) -> _Built:
    """The datasets of the tables in force (or at `as_of`), built partition by partition."""
    params = stored.meta(Layout(settings.data_root), "gold", PARAMS, as_of)
    build_config = {
        "release": DatasetOptions.from_settings(settings).record(),
        "splits": settings.splits.record(),
        "params": params,
    }
    out = partitioned_release(settings, as_of, build_config, privacy_of(settings, key))
    try:
        _prove(out.proof)
    except LeakageError:
        out.staged.remove()
        raise
    return _Built(out.staged, out.proof, out.ledger, out.replace_ids, out.dropped)


def _prove(proof: dict) -> None:
    problems = proof_problems(proof)
    if problems:
        raise LeakageError("; ".join(problems))


def release_request(
    settings: Settings, as_of: datetime | None = None
) -> tuple[ReleaseRequest, dict[str, int]]:
    """Everything a release would contain, built from the published warehouse, now or as of a
    past time, partition by partition (build/partitioned.py)."""
    layout = Layout(settings.data_root)
    options = DatasetOptions.from_settings(settings)
    params = stored.meta(layout, "gold", PARAMS, as_of)
    key, key_origin = pseudonym_key(settings)
    built = _built(settings, as_of, key)
    config = {
        "rewards": orjson.loads(params) if params is not None else None,
        "splits": settings.splits.record(),
        "release": options.record(),
        **settings.release_shape(),  # card and profiles: what the card says and which configs
        # the OpenAI files (and, when `[release] minari`, the Minari datasets) are made from
        # the rows by code: their versions make a change a new release
        "formats": {"openai": OPENAI_FORMAT}
        | ({"minari": MINARI_FORMAT} if settings.release_minari else {}),
        **config_part(built.proof),  # the evaluation sets decontaminated against, if any
        "privacy": {
            "pseudonymized": True,
            "redacted": True,
            "key": key_origin.split(" ")[0],
            "include_surveys": settings.privacy.include_surveys,
            "redaction": settings.privacy.record()["redaction"],
        },
    }
    # read once the datasets are built: a dict per raw file (~140 MB at 1 GB of raw data)
    raw_fingerprints = _raw_fingerprints(layout, as_of)
    files = built.replace_ids([row["file"] for row in raw_fingerprints])
    fingerprints = [row | {"file": file} for row, file in zip(raw_fingerprints, files, strict=True)]
    request = ReleaseRequest(
        built.staged,
        built.proof,
        config,
        fingerprints,
        package_version(),
        git_commit(),
        built.ledger,
        table_versions=stored.versions(layout, as_of),
        as_of=as_of.isoformat() if in_the_past(layout, as_of) else None,
    )
    return request, built.dropped


def release_agreement(layout: Layout, as_of: datetime | None = None) -> list[dict]:
    """Krippendorff's alpha per score name over the silver feedback the release is built from
    (the card and the manifest state it)."""
    table = stored_agreement(layout, as_of)
    return [] if table is None else table.to_dicts()


def _trainable(
    folder: Path, sha256: dict[str, str], previous: dict | None, include_neutral: bool
) -> Findings:
    """What the checks found on the written files (no problem: any problem refuses the
    release); a file the previous release's record answers for is not read again."""
    earlier = earlier_findings(previous, include_neutral)
    found = release_findings(folder, include_neutral, sha256, earlier)
    if found.problems:
        problems = found.problems
        raise UntrainableRelease(
            f"{len(problems)} trainability problems, nothing published: " + "; ".join(problems[:20])
        )
    return found


def make_release(settings: Settings, today: str, as_of: datetime | None = None) -> ReleaseOutcome:
    """Publish a new release under exports/, or return the identical one that already exists (same
    content hash: its partitions come from the release part store, nothing is written); with no
    episode at all, write nothing and return an outcome without a version. A new release is
    published only if its own written files pass the trainability checks; otherwise
    `UntrainableRelease` is raised and nothing is published. `as_of`: from the table snapshots
    in force at that time (`TableVersionGone` once their files are vacuumed)."""
    layout = Layout(settings.data_root)
    exports = layout.exports
    remove_abandoned(exports)
    if nothing_to_release(layout, as_of):
        return ReleaseOutcome(None, None, False, {})
    request, dropped = release_request(settings, as_of)
    try:
        digest = content_hash(request)
        found = existing_version(exports, digest)
        if found:
            found = reuse(layout, found, as_of)
            return ReleaseOutcome(found, exports / found, False, dropped)
        name = f"{today}-{digest[:10]}"
        request = replace(request, agreement=release_agreement(layout, as_of))
        neutral = bool(request.config["release"]["kto_include_neutral"])
        check = partial(_trainable, include_neutral=neutral)
        path = write_release(exports, name, digest, request, check=check)
        return ReleaseOutcome(name, path, True, dropped)
    finally:
        request.staged.remove()  # its files were moved into the release, or are not wanted
