"""The blocking checks as Dagster asset checks (the checks themselves are listed in
pipelines/checks/catalog.py, their verdicts are in pipelines/checks/verdicts.py).

The checks of one group (each bronze source, silver, gold, splits, release) run inside the asset
step that materializes the group (`@asset(check_specs=...)` / `@multi_asset(check_specs=...)`), not
in steps of their own: every Dagster step costs event-log writes even when its check is trivial,
and 11 check steps made a build of 23 steps instead of 12. Each check keeps its own blocking spec,
so a failed one still fails the step after its materializations and Dagster skips everything
downstream. Every check judges on every run (a contract reads only the partitions and bronze
parts it has not passed before: pipelines/checks/partitioned.py); what the step's contracts
passed is recorded once all its checks have judged, before their results are yielded.
"""

from collections.abc import Callable, Iterator, Mapping
from functools import cache

import dagster as dg

from pipelines.checks.catalog import BlockingCheck, blocking_checks
from pipelines.checks.verdicts import Markdown, Verdict
from pipelines.config.settings import Settings
from pipelines.storage import delta_cache

__all__ = ["blocking_checks", "check_results", "check_specs"]


@cache
def _checks_of(step: str) -> tuple[BlockingCheck, ...]:
    checks = tuple(check for check in blocking_checks() if check.step == step)
    if not checks:
        raise KeyError(f"no blocking checks run in step {step!r}")
    return checks


def check_specs(step: str) -> list[dg.AssetCheckSpec]:
    """The blocking specs of the checks the asset step `step` runs (catalog's `step` names)."""
    return [
        dg.AssetCheckSpec(
            c.name,
            asset=c.asset,
            description=c.description,
            blocking=True,
            additional_deps=list(c.additional_deps),
        )
        for c in _checks_of(step)
    ]


def check_results(
    step: str,
    settings: Settings,
    log: Callable[[str], None],
    run_tags: Mapping[str, str] | None = None,
) -> Iterator[dg.AssetCheckResult]:
    """The verdicts of the checks of `step` on the data just materialized, as Dagster results
    (yielded by the asset after its materializations); `log` gets one closing line; the run's
    tags may ask for every partition to be judged again (pipelines/checks/revalidate.py)."""
    from pipelines.checks.revalidate import revalidate_requested, revalidating

    checks = _checks_of(step)
    with revalidating(revalidate_requested(run_tags)):
        verdicts = judge_step(step, settings)
    reread = sum(v.metadata.get("partitions_validated", 0) for v in verdicts)
    log(f"{step}: {len(checks)} checks judged, {reread} partitions or part files read again")
    for check, verdict in zip(checks, verdicts, strict=True):
        yield _check_result(check, verdict)


def judge_step(step: str, settings: Settings) -> list[Verdict]:
    """The verdicts of the checks of `step`, in catalog order, with what its contracts passed
    recorded (a failure is never recorded: only what passed is)."""
    from pipelines.checks.passes import remember
    from pipelines.storage.engine import engine_digest
    from pipelines.storage.layout import Layout
    from pipelines.storage.lock import data_root_lock

    # The step has let the writer lock go, and with it the tables it kept open: the checks read
    # the same ingest logs and tables again and again (on S3 a fresh open is 2 requests and one
    # per commit), so they keep them open among themselves (the run's lease stands meanwhile).
    with delta_cache.reading():
        verdicts = [check.judge(settings) for check in _checks_of(step)]
    passes = [v.passes for v in verdicts if v.passes is not None]
    layout = Layout(settings.data_root)
    # Recording publishes a new snapshot of the layer from the one it reads: under the lock, so
    # that a writer that took the data root after this step let it go (a `turnlake build` beside a
    # run launched from Dagster) cannot publish in between and lose its snapshot to this one.
    with data_root_lock(layout, wait=settings.lock_wait_seconds):
        remember(layout, passes, engine_digest())
    return verdicts


def _check_result(check: BlockingCheck, verdict: Verdict) -> dg.AssetCheckResult:
    metadata = {
        k: dg.MetadataValue.md(v) if isinstance(v, Markdown) else v
        for k, v in verdict.metadata.items()
    }
    return dg.AssetCheckResult(
        asset_key=check.asset,
        check_name=check.name,
        passed=verdict.passed,
        severity=dg.AssetCheckSeverity.ERROR,
        metadata=metadata,
    )
