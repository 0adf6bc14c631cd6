"""`decision` silver is unit-local (pipelines/transforms/decision/units.py): silver of the whole
bronze (records, rating events, replays) equals the union of silver over any split of its
components, given the whole corpus's rating-scale evidence, `contexts` merged by hash."""

from __future__ import annotations

from datetime import UTC, datetime

import polars as pl
import pytest

from pipelines.transforms import units as u
from pipelines.transforms.decision import units as decision_units
from tests.unit import _locality as locality
from tests.unit._locality import (
    PROJECT,
    assert_bronze_unit_local,
    assert_unit_local,
    fixture_settings,
)
from tests.unit._unit_corpora import FIXTURES, bronze_rows, demo_raw

SOURCE = "decision"
RECORDS, RATINGS, REPLAYS = "decision_records", "decision_rating_events", "decision_replay_results"
SETTINGS = fixture_settings(PROJECT / "tests" / "fixtures" / "clean")
T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize("kind", ["clean", "dirty"])
@pytest.mark.parametrize("parts", [2, 3])
def test_fixture_silver_is_unit_local(kind, parts):
    assert assert_unit_local(SOURCE, FIXTURES / kind, parts=parts, seed=parts) >= 1


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_demo_silver_is_unit_local_for_two_to_five_parts(tmp_path, seed):
    # The demo alone has 7 sessions and 4 humans deciding in most of them (3–5 components):
    # the clean fixture beside it gives enough components for five parts.
    raw = demo_raw(SOURCE, tmp_path / "raw", seed, with_clean=True)
    for parts in range(2, 6):
        assert assert_unit_local(SOURCE, raw, parts=parts, seed=seed) > parts


def _record(did: str, session: str, **fields) -> dict:
    return {
        "file": "decisions/lab/export.jsonl",
        "locator": f"line {did}",
        "ordinal": 1,
        "file_kind": "jsonl",
        "decision_id": did,
        "session_id": session,
        "action": "POSTED",
        "response_content": f"answer {did}",
        "ts": T0,
        **fields,
    }


def _rating(event: str, did: str, line: int, rating: float) -> dict:
    return {
        "file": "ratings/lab.jsonl",
        "locator": f"line {line}",
        "line": line,
        "event_id": event,
        "decision_id": did,
        "rating": rating,
        "scale": "1-5",
        "rated_by": "user",
        "rated_at": T0,
    }


def _tiny_bronze() -> dict[str, pl.LazyFrame]:
    """Ana decides in s1 and s2; d3 has a copy in s3 and a differing one in s4; rating event e1
    is written for d1, then again (other content) for d3; a replay names the unknown d9."""
    human = {"actor_id": "ana", "actor_type": "human"}
    records = [
        _record("d1", "s1", **human),
        _record("d2", "s2", **human),
        _record("d3", "s3", actor_id="bot", actor_type="ai-persona"),
        _record("d3", "s4", actor_id="bot", actor_type="ai-persona", action="SILENT"),
    ]
    replay = {"file": "replays/p.jsonl", "locator": "line 1", "line": 1, "decision_id": "d9"}
    replay |= {"persona": "critic", "shape": "plain", "action": "SILENT"}
    return {
        RECORDS: bronze_rows(SOURCE, RECORDS, records),
        RATINGS: bronze_rows(
            SOURCE, RATINGS, [_rating("e1", "d1", 1, 4), _rating("e1", "d3", 2, 2)]
        ),
        REPLAYS: bronze_rows(SOURCE, REPLAYS, [replay]),
    }


def test_unit_keys_and_links_by_hand():
    tagged = decision_units.unit_keys(_tiny_bronze(), SETTINGS)
    units = {t: f.collect().get_column(u.UNIT).to_list() for t, f in tagged.items()}
    assert units == {
        RECORDS: ["decision:s1", "decision:s2", "decision:s3", "decision:s4"],
        RATINGS: ["decision:s1", "decision:s3"],  # d3 is in s3 and s4: the smaller
        REPLAYS: ["orphan:decision:d9"],
    }
    links = decision_units.unit_links(_tiny_bronze(), SETTINGS).collect()
    assert sorted(links.rows()) == [
        ("decision:s1", "event:e1"),
        ("decision:s3", "decision:d3"),
        ("decision:s3", "event:e1"),
        ("decision:s4", "decision:d3"),
    ]


def test_unit_groups_are_the_evidence_human_groups():
    """`unit_groups` takes each session's group from the evidence the plan made once: given
    groups naming s3 for s1, it returns them; a session the evidence does not name is its own."""
    given = pl.DataFrame({"episode_id": ["decision:s1"], "human_group": ["decision:s3"]})
    groups = decision_units.unit_groups(_tiny_bronze(), SETTINGS, {"human_groups": given.lazy()})
    found = dict(groups.select("unit", "group_id").collect().iter_rows())
    assert found["decision:s1"] == "decision:s3"
    assert found["decision:s2"] == "decision:s2"


def _failed_splits(bronze: dict[str, pl.LazyFrame]) -> int:
    """How many of eight random two-way splits of the components are not exact."""
    failures = 0
    for seed in range(8):
        try:
            assert_bronze_unit_local(SOURCE, bronze, SETTINGS, parts=2, seed=seed)
        except AssertionError:
            failures += 1
    return failures


@pytest.mark.parametrize("kind", ["decision", "event"])
def test_dropping_a_link_kind_breaks_locality(monkeypatch, kind):
    assert _failed_splits(_tiny_bronze()) == 0
    links = decision_units.unit_links
    monkeypatch.setattr(
        decision_units,
        "unit_links",
        lambda b, s: links(b, s).filter(~pl.col("link").str.starts_with(f"{kind}:")),
    )
    assert _failed_splits(_tiny_bronze()) > 0


def test_shared_system_prompt_is_one_context_row_after_the_merge(monkeypatch):
    """s1 and s2 share a system prompt: each partition writes its context row; the merge keeps
    one (without the merge's dedup on `context_hash` the union has it twice)."""
    prompt = {"system_prompt": "You are terse."}
    records = [_record("d1", "s1", **prompt), _record("d2", "s2", **prompt)]
    bronze = {RECORDS: bronze_rows(SOURCE, RECORDS, records)}
    assert _failed_splits(bronze) == 0
    monkeypatch.setattr(locality, "DEDUPED_ON", {})
    assert _failed_splits(bronze) > 0


def test_rating_of_one_in_a_part_is_settled_by_the_raters_other_ratings():
    """The lab user's 4 (s2) proves the user rates 1–5, so their 1 in s1 is the bottom of 1–5
    (evidence `rater`), also in a partition holding only s1; left to itself: `unknown`."""
    rated = {"outcome_rated_by": "user", "outcome_was_good": True, "outcome": "{}"}
    records = [
        _record("d1", "s1", outcome_rating=1.0, **rated),
        _record("d2", "s2", outcome_rating=4.0, file="decisions/lab/other.jsonl", **rated),
    ]
    bronze = {RECORDS: bronze_rows(SOURCE, RECORDS, records)}
    evidence = u.evidence(SOURCE, bronze, SETTINGS)
    assert sorted(evidence["rating_evidence"].collect().rows()) == [
        ("file", "decisions/lab/export.jsonl", False, False),
        ("file", "decisions/lab/other.jsonl", True, False),
        ("rater", "lab|user|", True, False),
    ]
    only_s1 = {RECORDS: bronze[RECORDS].filter(pl.col("session_id") == "s1")}

    def settled(silver: dict[str, pl.DataFrame]) -> list[tuple]:
        rating = silver["feedback"].filter(pl.col("name") == "rating").sort("decision_id")
        how = pl.col("attributes").str.json_path_match("$.scale_evidence")
        return rating.select("decision_id", "scale", how).rows()

    assert settled(u.transform(SOURCE, bronze, SETTINGS)) == [
        ("d1", "1-5", "rater"),
        ("d2", "1-5", "value"),
    ]
    assert settled(u.transform(SOURCE, only_s1, SETTINGS, evidence)) == [("d1", "1-5", "rater")]
    assert settled(u.transform(SOURCE, only_s1, SETTINGS)) == [("d1", "unknown", "none")]


def test_a_partition_reads_only_the_evidence_of_its_ones(monkeypatch):
    """Only the 1 (s1) reads evidence: its rater's row and its file's row. Given those rows the
    partition is exact; given none, its 1 would be `unknown`."""
    rated = {"outcome_rated_by": "user", "outcome_was_good": True, "outcome": "{}"}
    records = [
        _record("d1", "s1", outcome_rating=1.0, **rated),
        _record("d2", "s2", outcome_rating=4.0, file="decisions/lab/other.jsonl", **rated),
    ]
    bronze = {RECORDS: bronze_rows(SOURCE, RECORDS, records)}
    reads = decision_units.unit_evidence_reads(bronze, SETTINGS)
    assert sorted(reads["rating_evidence"].collect().rows()) == [
        ("decision:s1", "file", "decisions/lab/export.jsonl"),
        ("decision:s1", "rater", "lab|user|"),
    ]
    assert _failed_splits(bronze) == 0
    nothing = pl.LazyFrame(schema={u.UNIT: pl.String, "by": pl.String, "key": pl.String})
    monkeypatch.setattr(
        decision_units, "unit_evidence_reads", lambda b, s: {"rating_evidence": nothing}
    )
    assert _failed_splits(bronze) > 0


def test_a_session_transformed_alone_gets_its_split_group_from_the_whole_corpus(monkeypatch):
    """Ana decides in s1 and s2 at the same time: both are in group s1 (earliest, then smallest
    id), also when s2 is transformed without s1 (the groups are evidence, not links); without
    that evidence s2 alone would be its own group."""
    bronze = _tiny_bronze()
    evidence = u.evidence(SOURCE, bronze, SETTINGS)
    groups = evidence["human_groups"].collect()
    anas = groups.filter(pl.col("episode_id").is_in(["decision:s1", "decision:s2"]))
    assert sorted(anas.rows()) == [("decision:s1", "decision:s1"), ("decision:s2", "decision:s1")]
    only_s2 = locality.restrict(decision_units.unit_keys(bronze, SETTINGS), ["decision:s2"])
    read = locality.evidence_read(SOURCE, bronze, SETTINGS, evidence, ["decision:s2"])

    def group(silver: dict[str, pl.DataFrame]) -> list[tuple]:
        return silver["episodes"].select("episode_id", "group_id").rows()

    assert group(u.transform(SOURCE, only_s2, SETTINGS, read)) == [("decision:s2", "decision:s1")]
    assert group(u.transform(SOURCE, only_s2, SETTINGS)) == [("decision:s2", "decision:s2")]
    assert _failed_splits(bronze) == 0
    whole = decision_units.unit_evidence
    monkeypatch.setattr(
        decision_units,
        "unit_evidence",
        lambda b, s: {k: v for k, v in whole(b, s).items() if k != "human_groups"},
    )
    assert _failed_splits(bronze) > 0
