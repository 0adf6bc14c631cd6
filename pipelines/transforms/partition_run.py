"""Silver of one partition, as a Dagster partition run (`silver_partition`) makes it: committed,
never published; the build's silver step publishes what such runs committed and transforms
whatever is still stale (assemble.py).

Which units a partition holds, and its input digest, is known only from the whole of bronze's
keys (plan.py), so the planner (`wanted_runs`) plans once and commits the plan
(partition_plan.py); a run reads its partition's slice of it, decides against silver's record
whether the partition is still stale, reads only its units' bronze and the evidence they read,
transforms them and commits the partition as one group of the build would (marked pending, rows
and pieces, record). A run finding no plan made from what bronze, code, settings and published
silver are now plans again itself, as the build does. It leaves to the build: a data root whose
silver is not stored in partitions yet (made whole), every partition while the opt-out registry
names anyone (what the registry withholds from the tables stored whole is gathered over every
partition, in one process), and every partition while a forget erases (privacy/forget.py).
"""

from __future__ import annotations

import polars as pl

from pipelines.config.settings import Settings
from pipelines.partitions.assign import MAP_SCHEMA, PARTITION
from pipelines.partitions.store import INPUTS, INPUTS_SCHEMA, committed_silver_record
from pipelines.privacy.forget import forget_in_progress
from pipelines.privacy.optouts import empty_optouts, load_optouts
from pipelines.storage.layout import Layout
from pipelines.transforms.assemble import (
    Withheld,
    commit_group,
    mark_pending,
    previous_rows,
    transform_group,
)
from pipelines.transforms.build import load_bronze
from pipelines.transforms.partition_plan import PartitionPlan, commit_plan, committed_slice
from pipelines.transforms.plan import Plan, SourceUnits, plan_silver
from pipelines.transforms.units import UNIT, evidence, source_units

TRANSFORMED = "transformed"
UP_TO_DATE = "up to date"
NOT_PARTITIONED = "silver is not stored in partitions yet: the build job makes it whole"
OPT_OUTS = "the opt-out registry names someone: the build job transforms every partition"
FORGETTING = "a forget is erasing: the build job transforms it"


def _left_to_the_build(plan: Plan) -> str | None:
    if plan.whole:
        return NOT_PARTITIONED
    if plan.optouts:
        return OPT_OUTS
    return None


def wanted_runs(settings: Settings) -> tuple[dict[str, str], str | None]:
    """(stale partition holding units → its input digest, the run key's part; why none is
    wanted when the build must do them). The plan is committed for the runs when some are."""
    plan = plan_silver(settings)
    reason = _left_to_the_build(plan)
    if reason is not None:
        return {}, reason
    digests = dict(plan.digests.select(PARTITION, "inputs").iter_rows())
    # a partition no unit lives in any more is only emptied: left to the build
    wanted = {key: digests[key] for key in plan.stale if key in digests}
    if wanted:
        commit_plan(settings, plan)
    return wanted, None


def _sources(settings: Settings, layout: Layout, units: pl.DataFrame) -> dict[str, SourceUnits]:
    """What the transform needs of each source holding some of `units` (source, unit, files):
    its bronze tagged with units (lazy: only the units' files are read), its evidence, and the
    keys of the evidence rows those units read (plan.py reads them for every unit)."""
    found = {}
    for source in sorted(set(units.get_column("source"))):
        module = source_units(source)
        bronze = dict(load_bronze(source, layout))
        mine = units.filter(pl.col("source") == source)
        wanted = pl.col(UNIT).is_in(mine.get_column("unit").implode())
        ev = {name: f.collect() for name, f in evidence(source, bronze, settings).items()}
        reads = getattr(module, "unit_evidence_reads", None)
        by_key = reads(bronze, settings) if reads else {}
        read_keys = {name: by_key[name].filter(wanted).collect() for name in ev if name in by_key}
        files = mine.select("unit", file="files").explode("file").drop_nulls("file")
        found[source] = SourceUnits(module.unit_keys(bronze, settings), ev, read_keys, files)
    return found


def _from_slice(
    settings: Settings, key: str, planned: PartitionPlan, record: pl.DataFrame
) -> Plan | None:
    """The plan of partition `key` alone, from its committed slice; None when the slice does not
    hold its units (it was not stale when planned: plan again)."""
    if planned.units.is_empty():
        return None
    layout = Layout(settings.data_root)
    units = planned.units.select("source", "unit", "rows", pl.lit(key).alias(PARTITION))
    return Plan(
        sources=_sources(settings, layout, planned.units),
        partition_map=pl.DataFrame(schema=MAP_SCHEMA),  # published by the build, not a run
        units=units,
        digests=pl.DataFrame({PARTITION: [key], INPUTS: [planned.inputs]}, schema=INPUTS_SCHEMA),
        stale=[key],
        whole=False,
        record=record,
    )


def _recorded_inputs(record: pl.DataFrame, key: str) -> str | None:
    mine = record.filter(pl.col(PARTITION) == key).get_column(INPUTS)
    return mine[0] if len(mine) else None


def refresh_partition(settings: Settings, key: str) -> str:
    """Bring silver partition `key` up to date and commit it, unpublished; what was done
    (TRANSFORMED, UP_TO_DATE, or why it is left to the build)."""
    if not load_optouts(settings.raw_root)[0].is_empty():
        return OPT_OUTS  # before any read: the build transforms every partition
    layout = Layout(settings.data_root)
    planned = committed_slice(settings, key)
    record = committed_silver_record(layout)
    plan = None
    if planned is not None and record is not None:
        if _recorded_inputs(record, key) == planned.inputs:
            return UP_TO_DATE  # another run, or a build, did it since the plan
        plan = _from_slice(settings, key, planned, record)
    if plan is None:  # no current plan holding the partition: plan from bronze, as the build
        plan = plan_silver(settings)
        reason = _left_to_the_build(plan)
        if reason is not None:
            return reason
        if key not in plan.stale:
            return UP_TO_DATE
    # Checked before the pending mark (a forget in progress finds no new mark) and after it: a
    # forget that wrote its marker in between either sees the mark or is seen here, so no run
    # commits rows a forget has begun to erase. The mark left behind makes the build redo it.
    if forget_in_progress(layout):
        return FORGETTING
    mark_pending(layout, plan, [key])
    if forget_in_progress(layout):
        return FORGETTING
    tables = transform_group(plan, settings, [key], empty_optouts(), Withheld(), None)
    commit_group(layout, plan, tables, [key], previous_rows(plan), first=False)
    return TRANSFORMED
