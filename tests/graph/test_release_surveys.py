"""Survey answers stay out of releases unless configured, and then only under pseudonyms."""

import shutil

import polars as pl

from pipelines.release.build.schemas import dataset_schemas
from pipelines.release.store.files import latest_release
from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout
from tests.graph.test_build_graph import (
    PROJECT_CONFIG,
    clean_materialized,
    failed_checks,
    materialize_all,
)


def test_surveys_are_released_only_when_configured_and_then_pseudonymized(
    tmp_path, monkeypatch, built_once
):
    raw, data = clean_materialized(built_once, tmp_path / "built")  # by the project's config
    layout = Layout(data)
    assert not (layout.exports / latest_release(layout.exports) / "surveys").exists()
    participants = set(stored.read(layout, "silver", "survey_answers")["participant_id"])
    assert participants

    config = tmp_path / "turnlake.toml"
    shutil.copy(PROJECT_CONFIG, config)
    config.write_text(config.read_text() + "\n[privacy]\ninclude_surveys = true\n")
    monkeypatch.setattr("tests.graph.test_build_graph.PROJECT_CONFIG", config)
    result = materialize_all(raw, data)
    assert result.success and failed_checks(result) == []
    surveys = pl.read_parquet(
        layout.exports / latest_release(layout.exports) / "surveys" / "*.parquet"
    )
    assert surveys.height > 0
    # a release without survey answers writes empty files of this schema (build/schemas.py)
    assert surveys.schema == dataset_schemas()["surveys"]
    assert (
        participants.isdisjoint(set(surveys["participant_id"]))
        and surveys["participant_id"].str.starts_with("person_").all()
    )
    assert not any(p in surveys.write_ndjson() for p in participants)
