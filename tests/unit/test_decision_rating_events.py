"""Later ratings of decisions: the supersede rule and the events → feedback rows, on frames
built here with expectations worked out by hand."""

import hashlib
from datetime import UTC, datetime

import orjson
import polars as pl

from pipelines.transforms.decision.rating_events import rating_event_feedback, supersede_ratings


def _t(hour: int | None) -> datetime | None:
    return None if hour is None else datetime(2025, 3, 5, hour, tzinfo=UTC)


def _feedback(rows: list[tuple[str, str, str, str | None, int | None]]) -> pl.DataFrame:
    """(feedback_id, decision_id, name, rated_by, hour)."""
    return pl.DataFrame(
        {
            "feedback_id": [r[0] for r in rows],
            "decision_id": [r[1] for r in rows],
            "name": [r[2] for r in rows],
            "observed_at": pl.Series([_t(r[4]) for r in rows], dtype=pl.Datetime("us", "UTC")),
            "attributes": [
                None if r[3] is None else orjson.dumps({"rated_by": r[3]}).decode() for r in rows
            ],
        }
    )


def test_the_last_rating_per_decision_and_rater_kind_is_current():
    feedback = _feedback(
        [
            ("a", "d1", "rating", "user", 9),  # superseded by c (same decision, same kind, later)
            ("b", "d1", "rating", "system", 8),  # the only system rating of d1: current
            ("c", "d1", "rating", "User", 11),  # kinds compare without case
            ("d", "d2", "rating", "user", 7),  # another decision: current
            ("e", "d1", "was_good_decision", "user", 12),  # not a rating: untouched
            ("f", "d3", "rating", "user", None),  # no time stamp: older than g
            ("g", "d3", "rating", "user", 1),
            ("h", "d4", "rating", None, 1),  # no rater kind: never superseded
            ("i", "d4", "rating", None, 2),
        ]
    )
    names = dict(supersede_ratings(feedback).select("feedback_id", "name").iter_rows())
    assert names == {
        "a": "rating_superseded",
        "b": "rating",
        "c": "rating",
        "d": "rating",
        "e": "was_good_decision",
        "f": "rating_superseded",
        "g": "rating",
        "h": "rating",
        "i": "rating",
    }


def test_a_verdict_is_superseded_only_by_a_later_rating_of_its_rater_kind():
    feedback = _feedback(
        [
            ("r1", "d1", "rating", "user", 9),  # the source's own outcome: rating + verdict
            ("v1", "d1", "was_good_decision", "user", 9),  # superseded by r2 (user, later)
            ("r2", "d1", "rating", "user", 12),
            ("v2", "d2", "was_good_decision", "user", 9),  # a later rating of another kind
            ("r3", "d2", "rating", "system", 12),
        ]
    )
    names = dict(supersede_ratings(feedback).select("feedback_id", "name").iter_rows())
    assert names == {
        "r1": "rating_superseded",
        "v1": "was_good_decision_superseded",
        "r2": "rating",
        "v2": "was_good_decision",
        "r3": "rating",
    }


def test_same_instant_the_greater_feedback_id_wins():
    feedback = _feedback([("x2", "d1", "rating", "user", 9), ("x1", "d1", "rating", "user", 9)])
    names = dict(supersede_ratings(feedback).select("feedback_id", "name").iter_rows())
    assert names == {"x1": "rating_superseded", "x2": "rating"}


def _events(rows: list[tuple[str, str, float, str, int]]) -> pl.DataFrame:
    """(event_id, decision_id, rating, scale, line)."""
    return pl.DataFrame(
        {
            "file": ["ratings/ratings.jsonl"] * len(rows),
            "locator": [f"line {r[4]}" for r in rows],
            "line": [r[4] for r in rows],
            "event_id": [r[0] for r in rows],
            "decision_id": [r[1] for r in rows],
            "rating": [r[2] for r in rows],
            "scale": [r[3] for r in rows],
            "rated_by": ["community"] * len(rows),
            "rated_at": pl.Series([_t(10)] * len(rows), dtype=pl.Datetime("us", "UTC")),
            "reason": [None] * len(rows),
        }
    )


def _decisions(verdict: bool | None, by: str | None, hour: int | None) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "decision_id": ["d1"],
            "episode_id": ["decision:s1"],
            "outcome_was_good": pl.Series([verdict], dtype=pl.Boolean),
            "outcome_rated_by": pl.Series([by], dtype=pl.String),
            "outcome_rated_at": pl.Series([_t(hour)], dtype=pl.Datetime("us", "UTC")),
        }
    )


def test_a_rating_against_a_current_verdict_is_not_readable():
    # 0.25 on 0-1 (normalized 0.25 < 0.5) against wasGoodDecision true by the user at 08:00
    events = _events([("e1", "d1", 0.25, "0-1", 1)])  # rated by community at 10:00
    feedback, _ = rating_event_feedback(events, _decisions(True, "user", 8))
    assert orjson.loads(feedback["attributes"][0])["reading"] == "contradicts_was_good_decision"
    # the same verdict from the community, older than the event: superseded, so no contradiction
    feedback, _ = rating_event_feedback(events, _decisions(True, "community", 8))
    assert orjson.loads(feedback["attributes"][0])["reading"] == "ok"
    # 4 on 1-5 → (4 − 1) / 4 = 0.75 agrees with true
    events = _events([("e2", "d1", 4.0, "1-5", 1)])
    feedback, _ = rating_event_feedback(events, _decisions(True, "user", 8))
    assert orjson.loads(feedback["attributes"][0])["reading"] == "ok"


def test_events_become_ratings_orphans_and_conflicts_are_quarantined():
    decisions = _decisions(None, None, None)
    events = _events(
        [
            ("e1", "d1", 4.0, "1-5", 1),
            ("e1", "d1", 4.0, "1-5", 2),  # identical copy: collapses
            ("e1", "d1", 2.0, "1-5", 3),  # same id, other content: duplicate_conflict
            ("e2", "d9", 0.5, "0-1", 4),  # unknown decision: orphan
            ("e3", "d1", 0.25, "0-1", 5),
        ]
    )
    feedback, quarantine = rating_event_feedback(events, decisions)
    rows = feedback.sort("value_num").select("value_num", "scale", "source_kind", "episode_id")
    assert rows.rows() == [
        (0.25, "[0,1]", "human", "decision:s1"),
        (4.0, "1-5", "human", "decision:s1"),
    ]
    assert sorted(quarantine.select("error_kind", "locator").rows()) == [
        ("duplicate_conflict", "line 3"),
        ("orphan", "line 4"),
    ]


def test_a_rating_events_feedback_id_is_the_hash_of_its_event_id():
    feedback, _ = rating_event_feedback(
        _events([("e1", "d1", 4.0, "1-5", 1)]), _decisions(None, None, None)
    )
    text = '["rating_event","e1"]'
    assert feedback["feedback_id"].to_list() == [hashlib.sha256(text.encode()).hexdigest()[:20]]
