"""Silver brought up to date: nothing done when its inputs are unchanged, else assembled a group
of partitions at a time (assemble.py)."""

from __future__ import annotations

from pipelines.config.settings import Settings
from pipelines.schemas.silver import SILVER_MODELS
from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout
from pipelines.transforms.assemble import assemble_silver
from pipelines.transforms.build import silver_inputs_digest
from pipelines.transforms.timing import SilverTimes


def refresh_silver(
    settings: Settings, run_id: str, times: SilverTimes | None = None
) -> tuple[dict[str, int], bool]:
    """Assemble and publish silver unless its inputs are unchanged; row counts and whether
    rebuilt; each source's transform timed into `times` when given."""
    layout = Layout(settings.data_root)
    inputs = silver_inputs_digest(settings)
    if stored.meta(layout, "silver", stored.INPUTS) == inputs:
        return {t: stored.rows(layout, "silver", t) for t in SILVER_MODELS}, False
    return assemble_silver(settings, run_id, inputs, times), True
