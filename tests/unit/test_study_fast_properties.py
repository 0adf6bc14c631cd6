"""Property: for any session record, the fast row builder gives the per-record row or leaves the
record to the per-record path (None); it never gives a row the per-record path would not."""

from __future__ import annotations

import copy

from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.sources.base import RecordError
from pipelines.sources.study.fast import session_row_fast
from pipelines.sources.study.records import session_row

BASE = {
    "session_id": "s1",
    "participant_id": "p1",
    "character": "bob",
    "conversation_type": "roleplay",
    "persuasion_strategy": None,
    "turn_count": 2,
    "history": [{"role": "operator", "text": "Go."}, {"role": "resident", "text": "No"}],
    "iql_data": [
        {
            "turn": 1,
            "resident_message": "No",
            "operator_response": "Go.",
            "selected_policy": "bob",
            "q_values": {"bob": 0.5, "niki": -1.0},
            "judge": {"stance": "refuse", "confidence": 0.75, "reason": "No."},
            "timestamp": "2026-01-09T07:15:00+02:00",
        }
    ],
    "created_at": "2026-01-09T07:15:00",
    "ended_at": 1767942990.5,
}

PATHS = [
    ("session_id",),
    ("participant_id",),
    ("participantId",),
    ("character",),
    ("turn_count",),
    ("history",),
    ("history", 0),
    ("history", 0, "role"),
    ("history", 1, "text"),
    ("history", 1, "note"),
    ("iql_data",),
    ("iql_data", 0),
    ("iql_data", 0, "turn"),
    ("iql_data", 0, "q_values"),
    ("iql_data", 0, "q_values", "bob"),
    ("iql_data", 0, "judge"),
    ("iql_data", 0, "judge", "stance"),
    ("iql_data", 0, "judge", "confidence"),
    ("iql_data", 0, "judge", "reasoning"),
    ("iql_data", 0, "timestamp"),
    ("created_at",),
    ("ended_at",),
    ("scenario",),
    ("unknown",),
]

VALUES = st.one_of(
    st.sampled_from(
        [
            None,
            "",
            " ",
            "1",
            "0",
            "x",
            "operator",
            "resident",
            "2026-01-09T07:15:00Z",
            "2026-01-09 07:15",
            "1767942900",
            "1e400",
            "2100-01-01T00:00:00Z",
            True,
            0,
            1,
            -1,
            2**63,
            1.0,
            1.5,
            float("inf"),
            [],
            {},
            [1],
            {"a": 1},
        ]
    ),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(max_size=5),
)


def _holds(container: object, key: object) -> bool:
    if isinstance(container, dict):
        return key in container
    return isinstance(container, list) and isinstance(key, int) and key < len(container)


def _apply(record: dict, path: tuple, value: object) -> None:
    *parents, last = path
    for key in parents:
        if not _holds(record, key):
            return
        record = record[key]
    if isinstance(record, dict) or _holds(record, last):
        record[last] = value


@settings(max_examples=600, derandomize=True, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(PATHS), VALUES), max_size=3), st.sampled_from([None, "p9"])
)
def test_fast_row_is_the_per_record_row_or_none(changes, enclosing) -> None:
    record = copy.deepcopy(BASE)
    for path, value in changes:
        _apply(record, path, value)
    fast = session_row_fast(copy.deepcopy(record), "America/Los_Angeles", enclosing)
    if fast is None:
        return
    try:
        slow = session_row(record, "America/Los_Angeles", enclosing)
    except RecordError as err:
        raise AssertionError(f"fast path kept a record the per-record path rejects: {err}") from err
    assert fast == slow
