"""Exports: the versioned, immutable training-set release."""

from datetime import UTC, datetime

import dagster as dg

from assets.metadata import OWNERS, release_metadata
from pipelines.checks.factory import check_results, check_specs
from pipelines.orchestration.resources import TurnlakeResource
from pipelines.release.assemble import NOTHING_TO_RELEASE, ReleaseOutcome, make_release
from pipelines.schemas.gold import GOLD_MODELS
from pipelines.storage.lock import DATA_ROOT_POOL, data_root_lock


@dg.asset(
    pool=DATA_ROOT_POOL,
    name="release",
    deps=[dg.AssetKey(f"gold_{table}") for table in GOLD_MODELS],  # includes gold_splits
    group_name="exports",
    kinds={"parquet"},
    owners=OWNERS,
    # Backticks: Dagster renders descriptions as markdown, where a bare <version> is an HTML tag.
    description="`<data root>/exports/<version>/`: `sft`, `preference`, `kto`, `rl_steps` and "
    "`decisions` per split, with `manifest.json`, the dataset card (`README.md`) and "
    "`split_proof.json`. Identical inputs give the identical (existing) release.",
    check_specs=check_specs("release"),
)
def release(context: dg.AssetExecutionContext, turnlake: TurnlakeResource):
    settings = turnlake.settings()
    with data_root_lock(settings.layout, wait=settings.lock_wait_seconds):
        outcome = make_release(settings, today=datetime.now(UTC).strftime("%Y%m%d"))
    if outcome.version is None:
        context.log.info(NOTHING_TO_RELEASE)
        yield dg.MaterializeResult(
            metadata={"version": "none", "created": False, "note": NOTHING_TO_RELEASE}
        )
    else:
        yield _released(context, outcome)
    # `release_verifies` and `release_is_trainable` on the latest release, in this step
    yield from check_results("release", settings, context.log.debug, context.run.tags)


def _released(context: dg.AssetExecutionContext, outcome: ReleaseOutcome) -> dg.MaterializeResult:
    context.log.info(
        f"release {outcome.version} "
        f"{'written' if outcome.created else 'unchanged (already exists)'}"
        f" at {outcome.path}"
    )
    return dg.MaterializeResult(
        metadata={
            "version": outcome.version,
            "path": str(outcome.path),
            "created": outcome.created,
            "dropped_duplicate_prompts": sum(outcome.dropped_duplicate_prompts.values()),
            **release_metadata(outcome.path),
        }
    )


EXPORT_ASSETS = [release]
