"""The same records arriving in two files are stored once."""

import shutil
from pathlib import Path

from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout
from tests.graph.test_build_graph import clean_data_read_only, failed_checks, materialize_all

CLEAN = Path(__file__).parents[1] / "fixtures" / "clean"


def _copy_with_twins(raw: Path) -> None:
    """Every dialogue, feedback, study and decision export file gets an identical twin beside it;
    every scenario also appears under a second state folder."""
    shutil.copytree(CLEAN, raw)
    for pattern in (
        "dialogues/**/*.jsonl",
        "feedback/**/*.jsonl",
        "survey_responses/conversations/*.json",
        "decisions/**/*.jsonl",
    ):
        for path in list(raw.glob(pattern)):
            shutil.copy(path, path.with_name(f"twin-{path.name}"))
    for path in list(raw.glob("scenarios/completed/*/moderator_dialog.jsonl")):
        twin = raw / "scenarios" / "archived" / path.parent.name / path.name
        twin.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, twin)


def _counts(data: Path) -> dict[str, int]:
    layout = Layout(data)
    return {
        t: stored.read(layout, "silver", t).height
        for t in ("episodes", "turns", "feedback", "decisions", "contexts", "agent_rounds")
    }


def test_records_present_in_two_files_do_not_duplicate_silver_rows(tmp_path, built_once):
    single = clean_data_read_only(built_once)  # the clean fixtures, each file once
    raw = tmp_path / "raw"
    _copy_with_twins(raw)
    twinned = materialize_all(raw, tmp_path / "twinned")
    assert twinned.success and failed_checks(twinned) == []
    assert _counts(tmp_path / "twinned") == _counts(single)
