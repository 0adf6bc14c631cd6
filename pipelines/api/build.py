"""`build()`: the whole asset graph through Dagster; `demo()`: demo raw data."""

from __future__ import annotations

import logging
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from pipelines.api import unchanged
from pipelines.api.errors import BuildFailed, RawRootMissing
from pipelines.api.results import BuildResult, FailedCheck, ReleaseState
from pipelines.api.roots import (
    PathLike,
    dagster_home,
    locked,
    require_release_inputs,
    resolve_settings,
)
from pipelines.config.settings import Settings
from pipelines.storage.uri import is_remote

if TYPE_CHECKING:
    import dagster as dg

    from pipelines.reports.summary import BuildSummary

log = logging.getLogger("turnlake")


def demo(
    *,
    raw_root: PathLike | None = None,
    data_root: PathLike | None = None,
    scale: int = 1,
    seed: int = 7,
) -> Path:
    """Write realistic demo raw files of every source (with a few bad records of each kind)
    under the raw root, deterministic per `seed`; returns the raw root."""
    settings = resolve_settings(raw_root=raw_root, data_root=data_root)
    _write_demo(settings.raw_root, scale, seed)
    return settings.raw_root


def _write_demo(raw_root: Path, scale: int, seed: int) -> None:
    """Demo raw files under a local raw root, or written locally and uploaded to an S3 one."""
    from pipelines.demo import write_demo

    if not is_remote(raw_root):
        write_demo(raw_root, scale=scale, seed=seed)
        return
    from pipelines.sources.listing import upload_folder

    with tempfile.TemporaryDirectory(prefix="turnlake-demo-") as folder:
        write_demo(Path(folder), scale=scale, seed=seed)
        upload_folder(Path(folder), raw_root)


def _prepare_raw_root(settings: Settings, demo_if_empty: bool, scale: int, seed: int) -> bool:
    """Write demo data into an empty raw root when asked; True when it did. Raises
    `RawRootMissing` for a raw root that does not exist (an empty one builds empty tables)."""
    from pipelines.sources.listing import is_empty, raw_root_exists

    if is_empty(settings.raw_root) and demo_if_empty:
        _write_demo(settings.raw_root, scale, seed)
        log.info("raw root was empty: wrote demo data under %s", settings.raw_root)
        return True
    if not raw_root_exists(settings.raw_root):
        raise RawRootMissing(
            f"raw root {settings.raw_root} does not exist: create it and add raw files, point "
            "--raw-root at them, or pass --demo-if-empty to generate demo data"
        )
    if is_empty(settings.raw_root):
        log.info(
            "raw root %s holds no files: building empty tables "
            "(pass --demo-if-empty to generate demo data instead)",
            settings.raw_root,
        )
    return False


def _run_build_job(
    settings: Settings, revalidate: bool, wait: float, log_level: str, workers: int = 1
) -> tuple[dg.ExecutionResult, str | None]:
    """The run, and the state it left the data root in (taken under its lock; None: not taken)."""

    from pipelines.api.progress import with_progress
    from pipelines.checks.revalidate import revalidate_tag
    from pipelines.definitions import BUILD_JOB, build_definitions
    from pipelines.orchestration.build_record import data_root_state
    from pipelines.orchestration.instance import open_instance
    from pipelines.orchestration.memory import trims_after_each_step
    from pipelines.orchestration.run_tags import run_tags

    home = dagster_home(settings)
    roots = (settings.raw_root, settings.data_root, home)
    log.info("building: raw root %s, data root %s, Dagster home %s", *roots)
    tags = run_tags(settings) | revalidate_tag(revalidate)
    if workers > 1:
        from pipelines.api.workers import run_with_workers

        return run_with_workers(settings, workers, wait, log_level, tags), None
    job, run_config = with_progress(
        build_definitions(settings).resolve_job_def(BUILD_JOB), log_level
    )
    job = job.with_hooks({trims_after_each_step})
    with locked(settings, wait), open_instance(home) as instance:
        run = job.execute_in_process(
            instance=instance,
            raise_on_error=False,
            tags=tags,
            run_config=run_config,
        )
        return run, data_root_state(settings.layout) if run.success else None


def _failed_checks(result: dg.ExecutionResult) -> list[FailedCheck]:
    import dagster as dg

    return [
        FailedCheck(
            asset=evaluation.asset_key.to_user_string(),
            check=evaluation.check_name,
            blocking=evaluation.severity == dg.AssetCheckSeverity.ERROR,
            description=evaluation.description,
        )
        for evaluation in result.get_asset_check_evaluations()
        if not evaluation.passed
    ]


def _latest_release(settings: Settings, verified_in_run: bool) -> ReleaseState | None:
    """The latest release, verified again unless this run's `release_verifies` check passed (it
    re-hashes the same files: 1.2 s for a release of 1 GB of raw logs)."""
    from pipelines.release.store.files import latest_release
    from pipelines.release.store.verify import verify_release
    from pipelines.storage.layout import Layout

    exports = Layout(settings.data_root).exports
    version = latest_release(exports)
    if version is None:
        return None
    problems = [] if verified_in_run else verify_release(exports / version)
    return ReleaseState(version, exports / version, problems, verified_in_run=verified_in_run)


def _write_report(
    settings: Settings, summary: BuildSummary, run: dg.ExecutionResult
) -> Path | None:
    """The run's HTML report; a report that cannot be written is logged, never fails a build
    whose data is already published."""
    from pipelines.api.report import check_results, write_build_report

    try:
        return write_build_report(
            settings,
            summary,
            run.run_id,
            datetime.now(UTC),
            check_results(run.get_asset_check_evaluations()),
        )
    except Exception as err:  # noqa: BLE001 - the build's data is published; say so, go on
        log.warning("report not written: %s: %s", type(err).__name__, err)
        return None


def _reconciled(run: dg.ExecutionResult) -> dict[str, dict[str, int]]:
    """Per source, the totals its `nothing_lost` check found in this run (the summary reads them
    instead of reconciling every source again); a source whose check did not judge is absent."""
    from pipelines.ingest.reconcile import TOTALS

    return {
        e.asset_key.path[-1].removeprefix("bronze_"): {key: e.metadata[key].value for key in TOTALS}
        for e in run.get_asset_check_evaluations()
        if e.check_name == "nothing_lost" and all(key in e.metadata for key in TOTALS)
    }


def build(
    *,
    raw_root: PathLike | None = None,
    data_root: PathLike | None = None,
    demo_if_empty: bool = False,
    scale: int = 1,
    seed: int = 7,
    revalidate: bool = False,
    wait: float = 0.0,
    log_level: str = "INFO",
    workers: int = 1,
    force: bool = False,
) -> BuildResult:
    """Materialize the whole asset graph in-process through Dagster (the run is recorded in the
    Dagster instance, see `dagster_home`), holding the data root's lock, and summarize it.

    `demo_if_empty` writes demo data (`scale`, `seed`) into an empty raw root first; `revalidate`
    re-runs every check on its data instead of skipping what its contracts passed before; `wait`
    is how long to wait for another build's lock. `workers` > 1 runs the steps in that many
    processes at a time (Dagster's multiprocess executor), holding the data root for the whole
    run (a lease its steps share); 1 runs them in this process. Progress goes to the `turnlake`
    logger.

    When nothing changed since the last fully successful build (docs/engine/incremental.md), no run:
    the result is that build's, `unchanged_since` naming it; `force` runs anyway.

    Raises `SettingsError` (bad turnlake.toml or rewards.toml, no usable pseudonym key or an
    unreadable evaluation set: see `require_release_inputs`; before anything runs),
    `RawRootMissing`, `DataRootBusy`, and `BuildFailed` (carrying the `BuildResult`) when a
    blocking check failed or a step errored.
    """
    from pipelines.gold.params import load_params
    from pipelines.release.assemble import nothing_to_release
    from pipelines.reports.summary import build_summary
    from pipelines.storage.layout import Layout

    if workers < 1:
        raise ValueError(f"workers must be a whole number >= 1, got {workers}")
    settings = resolve_settings(raw_root=raw_root, data_root=data_root)
    require_release_inputs(settings)  # the release step needs them: stop now, not after the build
    params = load_params()  # a bad rewards.toml stops the build here, before anything runs
    demo_written = _prepare_raw_root(settings, demo_if_empty, scale, seed)
    with locked(settings, wait):  # a build holding the data root may be changing it
        decision = unchanged.decide(settings, params, force, revalidate, workers)
    if decision.matched is not None:
        return _published(settings, unchanged.unchanged_result(settings, decision.matched))
    unchanged.start_run(settings, decision)
    run, state = _run_build_job(settings, revalidate, wait, log_level, workers)
    failed = _failed_checks(run)
    verified_in_run = any(
        e.check_name == "release_verifies" and e.passed for e in run.get_asset_check_evaluations()
    )
    nothing = run.success and nothing_to_release(Layout(settings.data_root))
    summary = build_summary(settings, _reconciled(run), decision.raw_files)
    result = BuildResult(
        run_id=run.run_id,
        run_ok=run.success,
        raw_root=settings.raw_root,
        failed_checks=failed,
        summary=summary,
        warehouse=Layout(settings.data_root).duckdb,
        latest_release=_latest_release(settings, verified_in_run) if run.success else None,
        nothing_to_release=nothing,
        demo_written=demo_written,
        report=_write_report(settings, summary, run),
    )
    if not result.ok:
        raise BuildFailed(result)
    result = _published(settings, result)
    unchanged.record_build(settings, decision, run.run_id, state, result)
    return result


def _published(settings: Settings, result: BuildResult) -> BuildResult:
    """The latest release also published to `[release] store` when one is set (and it verified)."""
    from dataclasses import replace

    from pipelines.api.releases import publish_to_store

    latest = result.latest_release
    if latest is None or not latest.verified or result.nothing_to_release:
        return result
    published = publish_to_store(settings, latest.version)
    return replace(result, latest_release=replace(latest, published=published))
