"""Survey answers: their own long table, identifying answers left in bronze."""

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
