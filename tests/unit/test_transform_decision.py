"""decision bronze → silver: dedup across files, contexts by hash, feedback signals, turns."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

import orjson
import polars as pl
import pytest

from pipelines.config.settings import Settings
from pipelines.schemas import conform, frame_from_rows, polars_schema, silver_schema
from pipelines.schemas.bronze.decision import DecisionRecords
from pipelines.schemas.silver import SILVER_MODELS
from pipelines.transforms.decision import to_silver

PROMPT = "You are Helper AI. Be brief."
RAG = orjson.dumps(
    {"identity": {"systemPrompt": PROMPT}, "conversationHistory": []}, option=orjson.OPT_SORT_KEYS
).decode()  # bronze stores sorted keys
T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)


def record(decision_id: str, **overrides) -> dict:
    base = {
        "file": "decisions/db.sqlite",
        "locator": "row id 1",
        "ordinal": 1,
        "file_kind": "sqlite",
        "decision_id": decision_id,
        "session_id": "s1",
        "actor_id": "persona-helper",
        "actor_type": "ai-persona",
        "action": "SILENT",
        "confidence": 0.5,
        "system_prompt": PROMPT,
        "rag_context": RAG,
        "rag_context_encoding": "plain",
        "ts": T0,
    }
    return {**base, **overrides}


def silver(*rows: dict) -> dict[str, pl.DataFrame]:
    bronze = frame_from_rows(rows, polars_schema(DecisionRecords)).lazy()
    out = to_silver({"decision_records": bronze}, Settings())
    return {
        t: SILVER_MODELS[t].validate(conform(f, silver_schema(t)).collect(), lazy=True)
        for t, f in out.items()
    }


def test_every_output_validates_against_the_silver_models_even_when_empty():
    out = silver()
    assert set(out) == {
        "episodes",
        "turns",
        "decisions",
        "contexts",
        "feedback",
        "quarantine",
        "replays",
    }
    assert all(df.height == 0 for df in out.values())


def test_identical_copies_in_sqlite_and_jsonl_become_one_decision_without_quarantine():
    a = record("d1")
    b = record(
        "d1",
        file="decisions/export.jsonl",
        locator="line 1 (byte 0)",
        file_kind="jsonl",
        rag_context_encoding="object",
        extra='{"exportedAt":1}',
    )
    out = silver(a, b)
    assert out["decisions"]["decision_id"].to_list() == ["d1"]
    assert out["quarantine"].height == 0


def test_differing_copies_keep_the_rated_one_and_quarantine_the_other():
    rated = record("d1", outcome='{"rating":4}', outcome_rating=4.0)
    later_unrated = record(
        "d1", file="decisions/z.jsonl", locator="line 3 (byte 9)", file_kind="jsonl"
    )
    out = silver(rated, later_unrated)
    assert out["decisions"].height == 1
    assert orjson.loads(out["decisions"]["attributes"][0])["source_file"] == "decisions/db.sqlite"
    q = out["quarantine"].row(0, named=True)
    assert (q["file"], q["locator"], q["error_kind"], q["stage"]) == (
        "decisions/z.jsonl",
        "line 3 (byte 9)",
        "duplicate_conflict",
        "silver",
    )
    assert "has an outcome" in q["message"]


def test_differing_unrated_copies_keep_the_later_file():
    out = silver(
        record("d1", action="POSTED"),
        record("d1", file="decisions/z.jsonl", locator="line 1 (byte 0)"),
    )
    assert out["decisions"]["action"].to_list() == ["SILENT"]
    assert out["quarantine"]["file"].to_list() == ["decisions/db.sqlite"]


def test_repeated_system_prompt_is_stored_once_and_referenced_from_decisions():
    out = silver(
        record("d1"), record("d2", ts=T0.replace(minute=5), ambient_state='{"temperature":0.3}')
    )
    prompt_text = orjson.dumps(PROMPT).decode()
    prompt_hash = hashlib.sha256(prompt_text.encode()).hexdigest()
    contexts = dict(out["contexts"].select("context_hash", "context").iter_rows())
    assert contexts[prompt_hash] == prompt_text
    assert out["contexts"].height == 3  # two different full contexts + one system prompt
    hashes = {orjson.loads(a)["system_prompt_hash"] for a in out["decisions"]["attributes"]}
    assert hashes == {prompt_hash}


def test_context_hash_is_sha256_of_the_full_context_json():
    out = silver(record("d1"))
    full = {
        "ambient_state": None,
        "coordination_snapshot": None,
        "rag_context": orjson.loads(RAG),
        "visual_context": None,
    }
    text = orjson.dumps(full, option=orjson.OPT_SORT_KEYS).decode()
    row = out["decisions"].row(0, named=True)
    assert row["context_hash"] == hashlib.sha256(text.encode()).hexdigest()
    assert (
        dict(out["contexts"].select("context_hash", "context").iter_rows())[row["context_hash"]]
        == text
    )


@pytest.mark.parametrize(
    ("rating", "was_good", "scale", "evidence", "reading"),
    [
        (0.4, None, "[0,1]", "value", "ok"),
        (4.0, None, "1-5", "value", "ok"),
        (1.0, None, "unknown", "none", "scale_unknown"),  # top of 0–1 or bottom of 1–5: no evidence
        (
            1.0,
            False,
            "1-5",
            "was_good_decision",
            "ok",
        ),  # the top mark for a bad decision is excluded
        (1.0, True, "unknown", "none", "scale_unknown"),  # `true` may be a default: settles nothing
        (5.0, False, "1-5", "value", "contradicts_was_good_decision"),
    ],
)
def test_rating_keeps_its_value_and_records_its_scale_and_evidence(
    rating, was_good, scale, evidence, reading
):
    out = silver(
        record(
            "d1",
            outcome=f'{{"rating":{rating}}}',
            outcome_rating=rating,
            outcome_was_good=was_good,
            outcome_rated_by="user",
        )
    )
    fb = out["feedback"].filter(pl.col("name") == "rating").row(0, named=True)
    assert (
        fb["name"],
        fb["value_num"],
        fb["scale"],
        fb["source_kind"],
        fb["target"],
        fb["decision_id"],
    ) == ("rating", rating, scale, "human", "decision", "d1")
    attributes = orjson.loads(fb["attributes"])
    assert (attributes["scale_evidence"], attributes["reading"]) == (evidence, reading)


def _ratings(*values: tuple[str, float, str, str]) -> list[dict]:
    """(decision id, rating, rated_by, file) → bronze rows, one per minute."""
    return [
        record(
            d,
            outcome=f'{{"rating":{r}}}',
            outcome_rating=r,
            outcome_rated_by=by,
            file=f,
            ts=T0.replace(minute=i),
        )
        for i, (d, r, by, f) in enumerate(values)
    ]


def _scales(out: dict) -> dict[str, tuple[str, str]]:
    fb = out["feedback"].filter(pl.col("name") == "rating")
    return {
        r["decision_id"]: (r["scale"], orjson.loads(r["attributes"])["scale_evidence"])
        for r in fb.to_dicts()
    }


def test_a_1_is_settled_by_the_raters_other_ratings_before_the_files():
    out = silver(
        *_ratings(
            ("d1", 1.0, "user", "decisions/a/x.jsonl"),
            ("d2", 5.0, "user", "decisions/a/y.jsonl"),
            ("d3", 0.5, "system", "decisions/a/x.jsonl"),
        )
    )
    assert _scales(out)["d1"] == (
        "1-5",
        "rater",
    )  # its file says 0–1 (0.5), its rater says 1–5 (5): rater first


def test_raters_are_per_dataset_and_self_is_per_actor():
    rows = _ratings(
        ("d1", 1.0, "user", "decisions/a/x.jsonl"), ("d2", 5.0, "user", "decisions/b/x.jsonl")
    )
    rows += [
        record(
            "d3",
            outcome='{"rating":1}',
            outcome_rating=1.0,
            outcome_rated_by="self",
            actor_id="p-1",
            file="decisions/a/z.jsonl",
            ts=T0.replace(minute=5),
        ),
        record(
            "d4",
            outcome='{"rating":0.2}',
            outcome_rated_by="self",
            outcome_rating=0.2,
            actor_id="p-2",
            file="decisions/a/w.jsonl",
            ts=T0.replace(minute=6),
        ),
    ]
    scales = _scales(silver(*rows))
    assert scales["d1"] == ("unknown", "none")  # "user" of dataset b is not "user" of dataset a
    assert scales["d3"] == ("unknown", "none")  # p-2's self-rating says nothing about p-1


def test_the_dataset_setting_settles_the_scale_and_flags_values_off_it():
    settings = Settings(decision_rating_scale={"a": "1-5"})
    rows = _ratings(
        ("d1", 1.0, "user", "decisions/a/x.jsonl"),
        ("d2", 0.5, "user", "decisions/a/x.jsonl"),
        ("d3", 1.0, "user", "decisions/b/x.jsonl"),
    )
    out = to_silver(
        {"decision_records": frame_from_rows(rows, polars_schema(DecisionRecords)).lazy()}, settings
    )
    fb = {
        r["decision_id"]: (r["scale"], orjson.loads(r["attributes"]))
        for r in out["feedback"].to_dicts()
    }
    assert (fb["d1"][0], fb["d1"][1]["scale_evidence"], fb["d1"][1]["reading"]) == (
        "1-5",
        "setting",
        "ok",
    )
    assert (fb["d2"][0], fb["d2"][1]["reading"]) == ("1-5", "off_scale")
    # dataset b has no setting; its only other rating is in dataset a's file and rater, so: unknown
    assert (fb["d3"][0], fb["d3"][1]["reading"]) == ("unknown", "scale_unknown")


def test_was_good_decision_becomes_a_bool_signal():
    out = silver(
        record(
            "d1",
            outcome='{"wasGoodDecision":false}',
            outcome_was_good=False,
            outcome_rated_by="self",
        )
    )
    fb = out["feedback"].row(0, named=True)
    assert (fb["name"], fb["value_num"], fb["scale"], fb["source_kind"]) == (
        "was_good_decision",
        0.0,
        "bool",
        "self",
    )


def test_human_override_of_a_companion_suggestion_is_a_human_signal_and_following_is_not():
    overridden = record("d1", actor_type="human", action="SILENT", suggested_action="POSTED")
    followed = record("d2", actor_type="human", action="POSTED", suggested_action="POSTED")
    ai_differs = record("d3", actor_type="ai-persona", action="SILENT", suggested_action="POSTED")
    out = silver(overridden, followed, ai_differs)
    fb = out["feedback"]
    assert fb.select("decision_id", "name", "source_kind").rows() == [
        ("d1", "suggestion_overridden", "human")
    ]
    followed_flags = dict(out["decisions"].select("decision_id", "suggestion_followed").iter_rows())
    assert followed_flags == {"d1": False, "d2": True, "d3": False}


def test_suggestion_followed_is_the_sources_was_followed_else_actions_compared_case_insensitively():
    rows = [
        record(
            "d1", actor_type="human", action="POSTED", suggested_action="posted"
        ),  # no wasFollowed
        record(
            "d2", actor_type="human", action="SILENT", suggested_action="POSTED", was_followed=True
        ),
        record(
            "d3", actor_type="human", action="POSTED", suggested_action="POSTED", was_followed=False
        ),
        record("d4", actor_type="human", action="POSTED"),  # no suggestion
    ]
    out = silver(*rows)
    followed = dict(out["decisions"].select("decision_id", "suggestion_followed").iter_rows())
    assert followed == {"d1": True, "d2": True, "d3": False, "d4": None}
    sources = {
        d["decision_id"]: orjson.loads(d["attributes"])["suggestion_followed_from"]
        for d in out["decisions"].to_dicts()
    }
    assert sources == {"d1": "actions", "d2": "was_followed", "d3": "was_followed", "d4": None}


def test_alternatives_become_candidates_only_when_every_one_carries_a_value():
    rows = [
        record(
            "d1", action="POSTED", confidence=0.9, alternatives='[{"action":"SILENT","value":0.2}]'
        ),
        record(
            "d2",
            action="POSTED",
            alternatives='[{"action":"SILENT","confidence":0.2},{"action":"ERROR"}]',
        ),
    ]
    cands = dict(silver(*rows)["decisions"].select("decision_id", "candidates").iter_rows())
    assert cands == {
        "d1": [{"action": "POSTED", "value": 0.9}, {"action": "SILENT", "value": 0.2}],
        "d2": None,
    }


def test_candidates_stay_on_their_own_rows_among_rows_without_alternatives():
    rows = [
        record("d1", action="POSTED", confidence=0.5),
        record(
            "d2", action="SILENT", confidence=0.7, alternatives='[{"action":"POSTED","value":0.1}]'
        ),
        record("d3", action="POSTED", alternatives=""),
        record(
            "d4",
            action="POSTED",
            confidence=0.6,
            alternatives='[{"action":"SILENT","value":0.3},{"action":7,"confidence":"0.2"}]',
        ),
    ]
    cands = dict(silver(*rows)["decisions"].select("decision_id", "candidates").iter_rows())
    assert cands == {
        "d1": None,
        "d2": [{"action": "SILENT", "value": 0.7}, {"action": "POSTED", "value": 0.1}],
        "d3": None,
        "d4": [
            {"action": "POSTED", "value": 0.6},
            {"action": "SILENT", "value": 0.3},
            {"action": "7", "value": 0.2},
        ],
    }


def test_feedback_ids_are_stable_across_runs():
    row = record("d1", outcome='{"rating":5}', outcome_rating=5.0, outcome_was_good=True)
    assert (
        silver(row)["feedback"]["feedback_id"].to_list()
        == silver(row)["feedback"]["feedback_id"].to_list()
    )
    assert silver(row)["feedback"]["feedback_id"].n_unique() == 2


def test_posted_messages_become_turns_with_roles_by_actor_type():
    ai = record("d1", response_content="Try a clean install.", action="POSTED")
    human = record(
        "d2",
        actor_type="human",
        actor_id="user-ana",
        response_content="Thanks!",
        ts=T0.replace(minute=1),
    )
    silent = record("d3", ts=T0.replace(minute=2))
    out = silver(ai, human, silent)
    turns = out["turns"].select("turn_id", "turn_index", "role", "text").rows()
    assert turns == [
        ("decision:s1#0", 0, "assistant", "Try a clean install."),
        ("decision:s1#1", 1, "user", "Thanks!"),
    ]
    turn_of = dict(out["decisions"].select("decision_id", "turn_id").iter_rows())
    assert turn_of == {"d1": "decision:s1#0", "d2": "decision:s1#1", "d3": None}


def test_one_episode_per_session_with_group_equal_to_episode():
    out = silver(
        record("d1"),
        record("d2", session_id="s2", ts=T0.replace(hour=11)),
        record("d3", ts=T0.replace(hour=10)),
    )
    episodes = (
        out["episodes"]
        .select("episode_id", "native_id", "group_id", "started_at", "ended_at", "n_turns")
        .rows()
    )
    assert episodes == [
        ("decision:s1", "s1", "decision:s1", T0, T0.replace(hour=10), 0),
        ("decision:s2", "s2", "decision:s2", T0.replace(hour=11), T0.replace(hour=11), 0),
    ]


def test_feedback_id_is_the_hash_of_the_compact_json_of_its_signal():
    out = silver(record("d1", outcome_was_good=False, outcome_rated_by="self"))
    text = '["decision","d1","was_good_decision",0.0,"false"]'
    assert out["feedback"]["feedback_id"].to_list() == [
        hashlib.sha256(text.encode()).hexdigest()[:20]
    ]
