"""Where what a step's contracts passed is recorded: beside each layer's partition record
(`_partition_passes`, pipelines/partitions/store.py) and in the ingest log rows naming a bronze
part (pipelines/ingest/log.py); pipelines/checks/partitioned.py reads them back to skip what
passed. Only passes are recorded, never a failure."""

from __future__ import annotations

import polars as pl

from pipelines.checks.verdicts import Passes
from pipelines.ingest import log as ingest_log
from pipelines.partitions.store import PASSES_SCHEMA, record_passes
from pipelines.storage.layout import Layout


def remember(layout: Layout, found: list[Passes], engine: str) -> None:
    """Record what the contracts of one step passed, judged by `engine`: beside each layer's
    partition record, and in each source's ingest log (only what changed is written)."""
    layers: dict[str, list[Passes]] = {}
    sources: dict[str, list[Passes]] = {}
    for passes in found:
        if passes.layer == "bronze":
            sources.setdefault(passes.source, []).append(passes)
        else:
            layers.setdefault(passes.layer, []).append(passes)
    for layer, judged in layers.items():
        rows = [
            (p.table, partition, digest, engine)
            for p in judged
            for partition, digest in p.passed.items()
        ]
        frame = pl.DataFrame(rows, schema=PASSES_SCHEMA, orient="row")
        record_passes(layout, layer, [p.table for p in judged], frame)
    for source, judged in sources.items():
        if not any(p.read for p in judged):  # every part answered from its verdict: as logged
            continue
        log = ingest_log.read_log(layout, source)
        after = ingest_log.with_verdicts(log, {p.table: set(p.passed) for p in judged}, engine)
        if not after.equals(log):
            ingest_log.write_log(layout, source, after)
