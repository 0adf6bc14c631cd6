"""Gold partitions in Dagster: the dynamic partitions, and the planner that requests their runs.

Which partitions are stale depends on data (what silver holds now), which no partition mapping can
express (DESIGN §8), so a sensor plans: it adds the stale partitions' keys to the dynamic
partitions and requests one `gold_partition` run per stale partition. Those runs can go to any
executor (multiprocess, Kubernetes); the build job's `gold_tables` then only publishes what they
committed (and computes in-process whatever is still stale, which is everything on one machine).
"""

from __future__ import annotations

import dagster as dg

from pipelines.gold.params import load_params
from pipelines.gold.partitions import stale
from pipelines.orchestration.resources import TurnlakeResource
from pipelines.partitions.assign import PARTITION

GOLD_PARTITIONS = dg.DynamicPartitionsDefinition(name="turnlake_partitions")
PARTITION_JOB = "turnlake_gold_partitions"


def plan(turnlake: TurnlakeResource, known: set[str]) -> dg.SensorResult | dg.SkipReason:
    """Run requests for the stale gold partitions, adding the keys Dagster does not know yet."""
    todo, _, whole = stale(turnlake.settings().layout, load_params())
    if whole:
        return dg.SkipReason("gold is not stored in partitions yet: run the build job once")
    if todo.is_empty():
        return dg.SkipReason("every gold partition is up to date")
    keys = todo.get_column(PARTITION).to_list()
    digests = dict(todo.select(PARTITION, "digest").iter_rows())
    return dg.SensorResult(
        run_requests=[dg.RunRequest(partition_key=k, run_key=f"{k}:{digests[k]}") for k in keys],
        dynamic_partitions_requests=[
            GOLD_PARTITIONS.build_add_request([k for k in keys if k not in known])
        ],
    )


def partition_planner(job: dg.UnresolvedAssetJobDefinition) -> dg.SensorDefinition:
    @dg.sensor(
        name="gold_partition_planner",
        job=job,
        minimum_interval_seconds=60,
        default_status=dg.DefaultSensorStatus.STOPPED,
        description="Requests a gold_partition run for every partition whose silver rows, "
        "reward parameters or gold code changed.",
    )
    def _sensor(context: dg.SensorEvaluationContext, turnlake: TurnlakeResource):
        known = set(context.instance.get_dynamic_partitions(GOLD_PARTITIONS.name))
        return plan(turnlake, known)

    return _sensor
