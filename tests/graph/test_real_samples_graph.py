"""Conformance: the real files in ../shared/real_samples go through the whole graph, nothing
lost."""

import shutil

import pytest

from pipelines.config.settings import Settings
from pipelines.reports.summary import build_summary
from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout
from tests.conftest import REAL_SAMPLES
from tests.graph.test_build_graph import failed_checks, materialize_all

pytestmark = pytest.mark.skipif(
    not REAL_SAMPLES.is_dir(), reason="../shared/real_samples is absent"
)


def test_real_samples_build_with_all_checks_passing_and_nothing_quarantined(tmp_path):
    raw = tmp_path / "raw"
    # Each sample folder mirrors its origin repository's paths, i.e. a raw root of its own.
    for origin in (
        REAL_SAMPLES / "wildfire_persuasion",
        REAL_SAMPLES / "social_rl" / "Socratic-RCM",
    ):
        shutil.copytree(origin, raw, dirs_exist_ok=True)
    result = materialize_all(raw, tmp_path / "data")
    assert result.success and failed_checks(result) == []

    layout = Layout(tmp_path / "data")
    assert stored.read(layout, "silver", "quarantine").height == 0
    summary = build_summary(Settings(raw_root=raw, data_root=tmp_path / "data"))
    assert summary.reconciliation["balanced"].all()
    episodes = stored.read(layout, "silver", "episodes")
    by_source = dict(episodes.group_by("source").len().iter_rows())
    # 8 distinct study sessions across 4 files (one appears twice); 2 Social RL rounds.
    assert by_source == {"study": 8, "social_rl": 2}
    assert stored.read(layout, "silver", "agent_rounds").height == 6
