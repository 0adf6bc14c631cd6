"""Silver of one partition, as a Dagster partition run (`silver_partition`) makes it: committed,
never published; the build's silver step publishes what such runs committed and transforms
whatever is still stale (assemble.py).

A run plans like the build (plan.py: every source's unit keys, the partition map, every
partition's input digest), because which partitions are stale, and which units a partition
holds, is known only from the whole of bronze's keys; then it transforms its partition alone and
commits it as one group of the build would (marked pending, rows and pieces, record). It leaves
to the build: a data root whose silver is not stored in partitions yet (made whole), and every
partition while the opt-out registry names anyone (what the registry withholds from the tables
stored whole is gathered over every partition, in one process).
"""

from __future__ import annotations

from pipelines.config.settings import Settings
from pipelines.partitions.assign import PARTITION
from pipelines.privacy.optouts import empty_optouts
from pipelines.storage.layout import Layout
from pipelines.transforms.assemble import (
    Withheld,
    commit_group,
    mark_pending,
    previous_rows,
    transform_group,
)
from pipelines.transforms.plan import Plan, plan_silver

TRANSFORMED = "transformed"
UP_TO_DATE = "up to date"
NOT_PARTITIONED = "silver is not stored in partitions yet: the build job makes it whole"
OPT_OUTS = "the opt-out registry names someone: the build job transforms every partition"


def _left_to_the_build(plan: Plan) -> str | None:
    if plan.whole:
        return NOT_PARTITIONED
    if plan.optouts:
        return OPT_OUTS
    return None


def wanted_runs(settings: Settings) -> tuple[dict[str, str], str | None]:
    """(stale partition holding units → its input digest, the run key's part; why none is
    wanted when the build must do them)."""
    plan = plan_silver(settings)
    reason = _left_to_the_build(plan)
    if reason is not None:
        return {}, reason
    digests = dict(plan.digests.select(PARTITION, "inputs").iter_rows())
    # a partition no unit lives in any more is only emptied: left to the build
    return {key: digests[key] for key in plan.stale if key in digests}, None


def refresh_partition(settings: Settings, key: str) -> str:
    """Bring silver partition `key` up to date and commit it, unpublished; what was done
    (TRANSFORMED, UP_TO_DATE, or why it is left to the build)."""
    plan = plan_silver(settings)
    reason = _left_to_the_build(plan)
    if reason is not None:
        return reason
    if key not in plan.stale:
        return UP_TO_DATE
    layout = Layout(settings.data_root)
    mark_pending(layout, plan, [key])
    tables = transform_group(plan, settings, [key], empty_optouts(), Withheld(), None)
    commit_group(layout, plan, tables, [key], previous_rows(plan), first=False)
    return TRANSFORMED
