"""Silver is rebuilt when a setting it is computed with changes (else a stale label is served
silently)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from pipelines.config.settings import Settings
from pipelines.transforms.build import silver_inputs_digest


@pytest.mark.parametrize(
    "change",
    [
        {"decision_rating_scale": {"continuum": "1-5"}},
        {"source_timezones": {"study": "America/Los_Angeles"}},
        {"dialogue_turn_index_base": {"tutoring": 1}},
    ],
    ids=["decision_rating_scale", "source_timezones", "dialogue_turn_index_base"],
)
def test_a_changed_silver_setting_changes_the_silver_inputs_digest(tmp_path, change):
    settings = Settings(raw_root=tmp_path / "raw", data_root=tmp_path / "data")
    assert silver_inputs_digest(replace(settings, **change)) != silver_inputs_digest(settings)
