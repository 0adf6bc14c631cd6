"""Silver and gold partitions in Dagster: one dynamic partitions definition for both layers (the
partition keys of pipelines/partitions/), and the planner that requests their runs.

Which partitions are stale depends on data (bronze's unit keys for silver, what silver holds for
gold), which no partition mapping can express (DESIGN §8), so a sensor plans: it adds the stale
partitions' keys to the dynamic partitions and requests one run per stale partition, silver's
first. `gold_partition` depends on `silver_partition` under the identity mapping (one
definition), so a backfill of both runs each key's silver before its gold. Those runs can go to
any executor (multiprocess, Kubernetes); the build job's `silver_tables` and `gold_tables` then
only publish what they committed (and compute in-process whatever is still stale, which is
everything on one machine).
"""

from __future__ import annotations

import dagster as dg

from pipelines.gold.params import load_params
from pipelines.gold.partitions import stale
from pipelines.orchestration.resources import TurnlakeResource
from pipelines.partitions.assign import PARTITION
from pipelines.transforms.partition_run import wanted_runs

TURNLAKE_PARTITIONS = dg.DynamicPartitionsDefinition(name="turnlake_partitions")
PARTITION_JOB = "turnlake_partition_runs"
SILVER_PARTITION = dg.AssetKey("silver_partition")
GOLD_PARTITION = dg.AssetKey("gold_partition")


def _requests(
    digests: dict[str, str], layer: str, known: set[str], assets: list[dg.AssetKey]
) -> dg.SensorResult:
    keys = sorted(digests)
    return dg.SensorResult(
        run_requests=[
            dg.RunRequest(
                partition_key=k, run_key=f"{layer}:{k}:{digests[k]}", asset_selection=assets
            )
            for k in keys
        ],
        dynamic_partitions_requests=[
            TURNLAKE_PARTITIONS.build_add_request([k for k in keys if k not in known])
        ],
    )


def plan(turnlake: TurnlakeResource, known: set[str]) -> dg.SensorResult | dg.SkipReason:
    """Run requests for the stale silver partitions, or when none is stale the stale gold ones,
    adding the keys Dagster does not know yet. Gold waits for silver's to be published: a gold
    partition is computed from published silver, so its staleness is known only then."""
    settings = turnlake.settings()
    silver, left = wanted_runs(settings)
    if silver:
        return _requests(silver, "silver", known, [SILVER_PARTITION])
    todo, _, whole = stale(settings.layout, load_params())
    if whole:
        return dg.SkipReason("gold is not stored in partitions yet: run the build job once")
    if todo.is_empty():
        why = f" ({left})" if left else ""
        return dg.SkipReason(f"every silver and gold partition is up to date{why}")
    gold = dict(todo.select(PARTITION, "digest").iter_rows())
    return _requests(gold, "gold", known, [GOLD_PARTITION])


def partition_planner(job: dg.UnresolvedAssetJobDefinition) -> dg.SensorDefinition:
    @dg.sensor(
        name="partition_planner",
        job=job,
        minimum_interval_seconds=60,
        default_status=dg.DefaultSensorStatus.STOPPED,
        description="Requests a silver_partition run for every partition whose bronze inputs "
        "changed; when silver is up to date, a gold_partition run for every partition whose "
        "silver rows, reward parameters or gold code changed.",
    )
    def _sensor(context: dg.SensorEvaluationContext, turnlake: TurnlakeResource):
        known = set(context.instance.get_dynamic_partitions(TURNLAKE_PARTITIONS.name))
        return plan(turnlake, known)

    return _sensor
