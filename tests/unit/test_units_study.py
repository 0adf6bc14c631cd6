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
from pipelines.transforms import units as u
from pipelines.transforms.study import units
from pipelines.transforms.units import LINKS_SCHEMA as LINKS
from tests.unit._locality import assert_groups_whole, assert_unit_local

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture(scope="module")
def demo_roots(tmp_path_factory) -> dict[int, Path]:
    roots = {}
    for seed in (1, 2, 3, 4):
        root = tmp_path_factory.mktemp(f"study-demo-{seed}")
        demo_study.write(root, random.Random(f"{seed}:study"), 1)
        roots[seed] = root
    return roots


@pytest.mark.parametrize(("kind", "at_least"), [("clean", 2), ("dirty", 2)])
def test_fixtures_are_unit_local(kind, at_least):
    for seed in range(3):
        assert assert_unit_local("study", FIXTURES / kind, parts=2, seed=seed) >= at_least


@pytest.mark.parametrize(("seed", "parts"), [(1, 2), (2, 3), (3, 4), (4, 5)])
def test_demo_is_unit_local(demo_roots, seed, parts):
    assert assert_unit_local("study", demo_roots[seed], parts=parts, seed=seed) > parts


def _posts(*sessions: str) -> str:
    return orjson.dumps([{"sessionId": s, "willing": "yes"} for s in sessions]).decode()


UUID = "0f8e3a52-6c1d-4b7e-9a20-3d5b8c7e1f44"


def test_units_and_links_of_sessions_and_participants():
    sessions = pl.LazyFrame(
        {
            "session_id": ["p1_bob_1", "p1_bob_1", "x_amy_2", f"{UUID}_niki_5"],
            "participant_id": ["p1", None, None, None],
            "copy_kind": ["session_file", "master", "session_file", "session_file"],
            "file": ["a.json", "all.jsonl", "b.json", "c.json"],
            "locator": ["file", "line 1 (byte 0)", "file", "file"],
            "history": [["h"], ["h"], ["h"], ["h"]],
            "iql": [[1], [1], [1], [1]],
        }
    )
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
        f"study:{UUID}_niki_5",
    ]
    assert tagged["study_participants"].collect()["_unit"].to_list() == [
        "participant:p1",
        "participant-file:exits/INC009.json",
    ]
    links = units.unit_links(bronze, None).collect().sort("unit", "link")
    # x_amy_2 names no participant (no copy does, its id has no UUID prefix): no person link.
    assert links.rows() == [
        ("participant-file:exits/INC009.json", "survey:participant-file:exits/INC009.json"),
        ("participant:p1", "person:p1"),
        ("participant:p1", "survey:participant:p1"),
        (f"study:{UUID}_niki_5", f"person:{UUID}"),
        ("study:gone_3", "survey:participant:p1"),
        ("study:p1_bob_1", "person:p1"),
        ("study:p1_bob_1", "survey:participant:p1"),
        ("study:x_amy_2", "survey:participant-file:exits/INC009.json"),
    ]


def _no_links(_bronze: dict) -> pl.LazyFrame:
    return pl.LazyFrame(schema=LINKS)


def test_without_links_willing_feedback_is_not_local(demo_roots, monkeypatch):
    """A post-survey answer becomes feedback on the session it names, or an orphan when that
    session is elsewhere: dropping the links must fail the locality check for some split."""
    monkeypatch.setattr(units, "_survey_links", _no_links)
    monkeypatch.setattr(units, "_person_links", _no_links)
    failures = []
    for seed in range(6):
        try:
            assert_unit_local("study", demo_roots[1], parts=2, seed=seed)
        except AssertionError as error:
            failures.append(str(error))
    assert failures
    assert set(failures) <= {
        "study.feedback is not unit-local",
        "study.quarantine is not unit-local",
    }


def test_survey_links_alone_keep_it_local(demo_roots, monkeypatch):
    """Person links only keep split groups whole; the transform itself needs the survey links."""
    monkeypatch.setattr(units, "_person_links", _no_links)
    for seed in range(6):
        assert assert_unit_local("study", demo_roots[1], parts=2, seed=seed) > 2


def test_a_person_is_one_component(demo_roots, monkeypatch):
    """`person:<participant>` links keep a split group in one component (and so one partition):
    without them a participant's sessions fall into several components."""
    assert assert_groups_whole("study", demo_roots[1]) > 1
    monkeypatch.setattr(units, "_person_links", _no_links)
    with pytest.raises(AssertionError, match="groups split over components"):
        assert_groups_whole("study", demo_roots[1])


def test_links_and_groups_read_the_kept_copies_the_plan_collected_once():
    """The plan collects each session's kept copy once (`collect_shared`) for the person links
    and the groups: with it they are what they derive without it, and it is what they read."""
    sessions = pl.LazyFrame(
        {
            "session_id": ["s1", "s1", "s2"],
            "participant_id": [None, "p1", None],
            "copy_kind": ["session_file", "master", "session_file"],
            "file": ["a.json", "all.jsonl", "b.json"],
            "locator": ["file", "line 1 (byte 0)", "file"],
            "history": [["h", "i"], ["h"], ["h"]],
            "iql": [[1], [1], [1]],
        }
    )
    participants = pl.LazyFrame(
        {"file": ["completed/C.json"], "participant_id": ["p1"], "post_surveys": [None]},
        schema_overrides={"post_surveys": pl.String},
    )
    bronze = {"study_sessions": sessions, "study_participants": participants}

    def links_and_groups(given: dict) -> tuple[list, list]:
        links = units.unit_links(given, None).collect().sort("unit", "link").rows()
        groups = units.unit_groups(given, None, {}).collect().sort("unit").rows()
        return links, groups

    derived = links_and_groups(bronze)
    assert derived == (
        [("participant:p1", "person:p1"), ("study:s1", "person:p1")],
        [("participant:p1", "p1", 0), ("study:s1", "p1", 1), ("study:s2", "s2", 1)],
    )
    assert links_and_groups({**bronze, **u.collect_shared("study", bronze, None)}) == derived
    told = pl.LazyFrame({"session_id": ["s1", "s2"], "participant": [None, "p2"]})
    links, groups = links_and_groups({**bronze, units.CHOSEN: told})
    assert ("study:s2", "person:p2") in links and ("study:s1", "person:p1") not in links
    assert ("study:s2", "p2", 1) in groups and ("study:s1", "s1", 1) in groups
