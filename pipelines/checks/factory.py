"""The blocking checks as Dagster steps (the checks themselves are listed in
pipelines/checks/catalog.py, their verdicts are in pipelines/checks/verdicts.py).

The checks of one group (each bronze source, silver, gold, splits, release) run in one Dagster
step, a multi-asset check, because every step costs event-log writes even when its check is
trivial. Each check keeps its own blocking spec, so a failed one fails its step and Dagster skips
everything downstream. A check whose inputs and code are those it last passed on is answered from
the validation ledger (pipelines/checks/ledger.py) without reading the data.
"""

from collections.abc import Callable

import dagster as dg

from pipelines.checks.catalog import BlockingCheck, blocking_checks
from pipelines.checks.ledger import Markdown, Verdict, cached_verdict
from pipelines.config.settings import Settings
from pipelines.storage.lock import DATA_ROOT_POOL

__all__ = ["blocking_checks", "build_blocking_checks"]


def _check_key(check: BlockingCheck) -> dg.AssetCheckKey:
    return dg.AssetCheckKey(dg.AssetKey(check.asset), check.name)


# ---------------------------------------------------------------- as Dagster steps


def build_blocking_checks(
    settings_of: Callable[[object], Settings],
) -> list[dg.AssetChecksDefinition]:
    """One multi-asset check per step; `settings_of(resource)` resolves the run's settings."""
    steps: dict[str, list[BlockingCheck]] = {}
    for check in blocking_checks():
        steps.setdefault(check.step, []).append(check)
    return [_step_checks(step, checks, settings_of) for step, checks in steps.items()]


def _step_checks(
    step: str, checks: list[BlockingCheck], settings_of: Callable[[object], Settings]
) -> dg.AssetChecksDefinition:
    specs = [
        dg.AssetCheckSpec(
            c.name,
            asset=c.asset,
            description=c.description,
            blocking=True,
            additional_deps=list(c.additional_deps),
        )
        for c in checks
    ]

    @dg.multi_asset_check(
        specs=specs,
        name=f"{step}_checks",
        can_subset=True,
        required_resource_keys={"turnlake"},
        pool=DATA_ROOT_POOL,  # records passes in the validation ledger under the data root
    )
    def _checks(context: dg.AssetCheckExecutionContext):
        settings = settings_of(context.resources.turnlake)
        selected = [c for c in checks if _check_key(c) in context.selected_asset_check_keys]
        reused = 0
        for check in selected:
            verdict = cached_verdict(
                settings.data_root,
                check.check_id,
                check.digest(settings),
                context.run.run_id,
                lambda check=check: check.judge(settings),
            )
            reused += bool(verdict.metadata.get("reused"))
            yield _check_result(check, verdict)
        context.log.info(
            f"{step}: {len(selected) - reused} checks validated, {reused} unchanged since they "
            "passed"
        )

    return _checks


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
