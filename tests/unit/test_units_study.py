"""Study silver units (pipelines/transforms/study/units.py): a unit per session and per
participant, linked where a participant's post-surveys name sessions; silver of all bronze ==
union of silver over any split of the components."""

from __future__ import annotations

import random
from pathlib import Path

import orjson
import polars as pl
import pytest

from pipelines.demo import study as demo_study
from pipelines.transforms.study import units
from tests.unit._locality import assert_unit_local

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture(scope="module")
def demo_roots(tmp_path_factory) -> dict[int, Path]:
    roots = {}
    for seed in (1, 2, 3, 4):
        root = tmp_path_factory.mktemp(f"study-demo-{seed}")
        demo_study.write(root, random.Random(f"{seed}:study"), 1)
        roots[seed] = root
    return roots


@pytest.mark.parametrize(("kind", "at_least"), [("clean", 3), ("dirty", 2)])
def test_fixtures_are_unit_local(kind, at_least):
    for seed in range(3):
        assert assert_unit_local("study", FIXTURES / kind, parts=2, seed=seed) >= at_least


@pytest.mark.parametrize(("seed", "parts"), [(1, 2), (2, 3), (3, 4), (4, 5)])
def test_demo_is_unit_local(demo_roots, seed, parts):
    assert assert_unit_local("study", demo_roots[seed], parts=parts, seed=seed) > parts


def _posts(*sessions: str) -> str:
    return orjson.dumps([{"sessionId": s, "willing": "yes"} for s in sessions]).decode()


def test_participant_and_the_sessions_its_post_surveys_name_share_a_link():
    sessions = pl.LazyFrame({"session_id": ["p1_bob_1", "p1_bob_1", "x_amy_2"]})
    participants = pl.LazyFrame(
        {
            "file": ["completed/CCC001.json", "exits/INC009.json"],
            "participant_id": ["p1", None],
            "post_surveys": [_posts("p1_bob_1", "gone_3"), _posts("x_amy_2")],
        }
    )
    bronze = {"study_sessions": sessions, "study_participants": participants}
    tagged = units.unit_keys(bronze, None)
    assert tagged["study_sessions"].collect()["_unit"].to_list() == [
        "study:p1_bob_1",
        "study:p1_bob_1",
        "study:x_amy_2",
    ]
    assert tagged["study_participants"].collect()["_unit"].to_list() == [
        "participant:p1",
        "participant-file:exits/INC009.json",
    ]
    links = units.unit_links(bronze, None).collect().sort("unit", "link")
    assert links.rows() == [
        ("participant-file:exits/INC009.json", "survey:participant-file:exits/INC009.json"),
        ("participant:p1", "survey:participant:p1"),
        ("study:gone_3", "survey:participant:p1"),
        ("study:p1_bob_1", "survey:participant:p1"),
        ("study:x_amy_2", "survey:participant-file:exits/INC009.json"),
    ]


def test_without_survey_links_willing_feedback_is_not_local(demo_roots, monkeypatch):
    """A post-survey answer becomes feedback on the session it names, or an orphan when that
    session is elsewhere: dropping the links must fail the locality check for some split."""
    monkeypatch.setattr(units, "unit_links", lambda *_: pl.LazyFrame(schema=units.LINKS_SCHEMA))
    failures = []
    for seed in range(6):
        try:
            assert_unit_local("study", demo_roots[1], parts=2, seed=seed)
        except AssertionError as error:
            failures.append(str(error))
    assert failures
    assert all("feedback" in f or "quarantine" in f for f in failures)
