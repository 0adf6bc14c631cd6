"""Silver and gold partitions in Dagster: one dynamic partitions definition for both layers (the
partition keys of pipelines/partitions/), and the planner that requests their runs.

Which partitions are stale depends on data (bronze's unit keys for silver, what silver holds for
gold), which no partition mapping can express (DESIGN §8), so a sensor plans, once for every run it
requests (the plan committed for them: transforms/partition_plan.py): it adds the stale
partitions' keys to the dynamic partitions and requests one run per stale partition: silver's
then gold's of a partition whose bronze changed, gold's alone of one whose gold alone is stale.
`gold_partition` depends on `silver_partition` under the identity mapping (one definition), so
a run or a backfill of both materializes each key's silver before its gold, and gold reads
silver as committed. Those runs can go to any executor (multiprocess, Kubernetes); the build
job's `silver_tables` and `gold_tables` then only publish what they committed (and compute
in-process whatever is still stale, which is everything on one machine).
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


def _requests(digests: dict[str, str], layer: str, assets: list[dg.AssetKey]) -> list:
    return [
        dg.RunRequest(partition_key=k, run_key=f"{layer}:{k}:{digests[k]}", asset_selection=assets)
        for k in sorted(digests)
    ]


def plan(turnlake: TurnlakeResource, known: set[str]) -> dg.SensorResult | dg.SkipReason:
    """One run per stale silver partition, of silver_partition then gold_partition (gold reads
    silver as committed: pipelines/gold/partitions.py); one of gold_partition alone per other
    partition whose gold is stale (reward parameters or gold code changed); the keys Dagster
    does not know yet added."""
    settings = turnlake.settings()
    silver, left = wanted_runs(settings)
    todo, _, whole = stale(settings.layout, load_params(), newest=True)
    gold = {} if whole else dict(todo.select(PARTITION, "digest").iter_rows())
    gold = {k: d for k, d in gold.items() if k not in silver}
    if not silver and not gold:
        notes = [n for n in (left, "gold is not stored in partitions yet" if whole else "") if n]
        why = f" ({'; '.join(notes)})" if notes else ""
        return dg.SkipReason(f"no silver or gold partition to run{why}")
    keys = sorted({*silver, *gold})
    return dg.SensorResult(
        run_requests=[
            *_requests(silver, "silver", [SILVER_PARTITION, GOLD_PARTITION]),
            *_requests(gold, "gold", [GOLD_PARTITION]),
        ],
        dynamic_partitions_requests=[
            TURNLAKE_PARTITIONS.build_add_request([k for k in keys if k not in known])
        ],
    )


def partition_planner(job: dg.UnresolvedAssetJobDefinition) -> dg.SensorDefinition:
    @dg.sensor(
        name="partition_planner",
        job=job,
        minimum_interval_seconds=60,
        default_status=dg.DefaultSensorStatus.STOPPED,
        description="Requests a run of silver_partition then gold_partition for every "
        "partition whose bronze inputs changed, and of gold_partition for every other one whose "
        "silver rows, reward parameters or gold code changed.",
    )
    def _sensor(context: dg.SensorEvaluationContext, turnlake: TurnlakeResource):
        known = set(context.instance.get_dynamic_partitions(TURNLAKE_PARTITIONS.name))
        return plan(turnlake, known)

    return _sensor
