"""Gold brought up to date: nothing done when its inputs are unchanged, else recomputed partition
by partition from partitioned silver (partitions.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pipelines.gold import GOLD_TABLES, gold_inputs_digest
from pipelines.gold.params import PARAMS
from pipelines.gold.partitions import bring_up_to_date
from pipelines.sources.base import dumps
from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout


def refresh_gold(
    layout: Layout, params: Mapping[str, Any], run_id: str
) -> tuple[dict[str, int], bool]:
    """Recompute the gold of every silver partition whose inputs changed (in chunks, so memory
    follows a chunk; partitions a partition run already brought up to date are not redone) and
    publish; rows per table and whether anything was rebuilt. (Reusing the published snapshot also
    lets its checks reuse their verdicts.)"""
    inputs = gold_inputs_digest(layout, params)
    if stored.meta(layout, "gold", stored.INPUTS) == inputs:
        return {t: stored.rows(layout, "gold", t) for t in GOLD_TABLES}, False
    meta = {stored.RUN: run_id, stored.INPUTS: inputs, PARAMS: dumps(params)}
    committed = bring_up_to_date(layout, params)
    stored.publish(layout, "gold", {}, meta, committed=committed)
    return {t: stored.rows(layout, "gold", t) for t in GOLD_TABLES}, True
