"""Survey answers: their own long table, identifying answers left in bronze."""

from datetime import UTC, datetime

import orjson
import polars as pl

from pipelines.transforms.study.surveys import survey_answers


def participants(
    survey: dict, posts: list, file: str = "survey_responses/completed/CCC001.json"
) -> pl.LazyFrame:
    return pl.LazyFrame(
        {
            "file": [file],
            "participant_id": ["p-1"],
            "confirmation_number": ["CCC001"],
            "survey": [orjson.dumps(survey).decode()],
            "post_surveys": [orjson.dumps(posts).decode()],
        }
    )


SURVEY = {
    "timestamp": "2026-01-09T07:16:59.838Z",
    "background": {"email": "a@example.org", "nickname": "Mavis", "age": "34"},
    "personality": {"q1": "5"},
    "moral": {"q1": "4"},
    "specialNeeds": {"vehicle": "no"},
}
POSTS = [
    {
        "sessionId": "p-1_niki_1",
        "participantId": "p-1",
        "willing": "yes",
        "timestamp": "2026-01-09T07:20:03Z",
    }
]


def test_one_row_per_answer_with_numbers_parsed_and_post_surveys_tied_to_their_session():
    frame = survey_answers(participants(SURVEY, POSTS))
    got = {(r["section"], r["question"]): r for r in frame.iter_rows(named=True)}
    assert set(got) == {
        ("background", "age"),
        ("personality", "q1"),
        ("moral", "q1"),
        ("specialNeeds", "vehicle"),
        ("post_survey", "willing"),
    }
    assert got[("background", "age")]["answer_num"] == 34.0
    assert got[("post_survey", "willing")]["session_id"] == "p-1_niki_1"
    assert got[("personality", "q1")]["answered_at"] is not None


def test_identifying_answers_never_reach_the_table():
    text = survey_answers(participants(SURVEY, POSTS)).write_json()
    assert "a@example.org" not in text and "Mavis" not in text


def test_each_answer_carries_the_time_of_its_own_survey_or_post_survey():
    rows = pl.concat(
        [
            participants(
                {"timestamp": "2026-01-09T07:16:59.838Z", "personality": {"q1": "5"}}, []
            ).with_columns(participant_id=pl.lit("p-1")),
            participants(
                {"timestamp": "2026-02-01T10:00:00.000Z", "moral": {"q1": "4", "q2": "2"}},
                [{"sessionId": "p-2_niki_1", "willing": "no", "timestamp": "2026-02-01T10:05:30Z"}],
                file="survey_responses/completed/CCC002.json",
            ).with_columns(participant_id=pl.lit("p-2")),
            participants({"specialNeeds": {"vehicle": "yes"}}, []).with_columns(
                participant_id=pl.lit("p-3")
            ),
        ]
    )
    frame = survey_answers(rows)
    got = {
        (r["participant_id"], r["question"], r["section"]): r["answered_at"]
        for r in frame.iter_rows(named=True)
    }
    utc = UTC
    assert got == {
        ("p-1", "q1", "personality"): datetime(2026, 1, 9, 7, 16, 59, 838000, tzinfo=utc),
        ("p-2", "q1", "moral"): datetime(2026, 2, 1, 10, 0, tzinfo=utc),
        ("p-2", "q2", "moral"): datetime(2026, 2, 1, 10, 0, tzinfo=utc),
        ("p-2", "willing", "post_survey"): datetime(2026, 2, 1, 10, 5, 30, tzinfo=utc),
        ("p-3", "vehicle", "specialNeeds"): None,
    }
