"""Conformance: the decision source's rules (DESIGN §3 decision bullet, §5, seed 004
CoordinationDecision).

Each test writes a few CoordinationDecision records by hand (camelCase JSONL export, or a SQLite
row with JSON text columns), runs the real pipeline and compares silver / gold / the release with
numbers worked out by hand in the test. Rating arithmetic: a 1–5 rating r normalizes to n = (r −
1) / 4, a 0–1 rating to n = r; the reward is 2n − 1.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import polars as pl
import pytest

from tests.conformance.harness import ALL_TRAIN, Built, run_pipeline, write_jsonl

PROMPT = "You are Helper AI. Answer briefly."
HISTORY = [{"role": "user", "name": "Joel", "content": "Is the widget build red again?"}]


def record(
    decision_id: str,
    *,
    session: str = "s-1",
    actor: str = "persona-helper",
    actor_type: str = "ai-persona",
    action: str = "POSTED",
    confidence: float = 0.8,
    outcome: dict | None = None,
    suggestion: dict | None = None,
    minute: int = 0,
    decision_extra: dict | None = None,
    **top_level: object,
) -> dict:
    """One exported CoordinationDecision entity (camelCase), as seed 004 lays it out."""
    decision: dict = {"action": action, "confidence": confidence, **(decision_extra or {})}
    if suggestion is not None:
        decision["companionSuggestion"] = suggestion
    return {
        "id": decision_id,
        "timestamp": f"2025-03-03T09:{minute:02d}:00Z",
        "actorId": actor,
        "actorType": actor_type,
        "actorName": "Helper AI" if actor_type != "human" else "Ana",
        "domain": "chat",
        "ragContext": {"identity": {"systemPrompt": PROMPT}, "conversationHistory": HISTORY},
        "decision": decision,
        "outcome": outcome,
        "metadata": {"sessionId": session, "sequenceNumber": minute + 1},
        **top_level,
    }


def rated(
    rating: float | None = None, was_good: bool | None = None, rated_by: str = "user"
) -> dict:
    outcome: dict = {"ratedBy": rated_by, "ratedAt": 1741000000000, "reasoning": "checked later"}
    if rating is not None:
        outcome["rating"] = rating
    if was_good is not None:
        outcome["wasGoodDecision"] = was_good
    return outcome


def build(
    tmp_path: Path,
    records: list[dict],
    *,
    dataset: str = "continuum",
    config: str = ALL_TRAIN,
    more: dict[str, list[dict]] | None = None,
) -> Built:
    raw = tmp_path / "raw"
    write_jsonl(raw / "decisions" / dataset / "export.jsonl", records)
    for path, extra in (more or {}).items():
        write_jsonl(raw / "decisions" / path, extra)
    return run_pipeline(raw, tmp_path / "data", config=config)


def reward_of(built: Built, decision_id: str) -> float | None:
    rows = built.gold["turn_rewards"].filter(pl.col("decision_id") == decision_id)
    assert rows.height <= 1
    return rows["reward"][0] if rows.height else None


def rating_row(built: Built, decision_id: str) -> dict:
    fb = built.silver["feedback"].filter(
        (pl.col("decision_id") == decision_id) & (pl.col("name") == "rating")
    )
    (row,) = fb.to_dicts()
    return {**row, "attributes": json.loads(row["attributes"])}


def released(built: Built, dataset: str, decision_id: str) -> list[dict]:
    frame = built.datasets.get(dataset)
    if frame is None or "decision_id" not in frame.columns:
        return []
    return frame.filter(pl.col("decision_id") == decision_id).to_dicts()


def override_pairs(built: Built) -> list[dict]:
    frame = built.datasets.get("preference")
    if frame is None:
        return []
    return frame.filter(pl.col("pair_kind") == "override").to_dicts()


# ---------------------------------------------------------------- rating scale settled by evidence


def test_rating_1_on_1_5_scale_with_was_good_false_is_negative(tmp_path):
    """Issue 13 item 1: a rater on 1–5 gives the worst mark and says the decision was bad."""
    built = build(tmp_path, [record("d-1", outcome=rated(1, was_good=False))])
    # 0–1 reading: +1 for a decision its rater calls bad — excluded; 1–5 reading: n = (1 − 1) / 4 =
    # 0 → 2·0 − 1 = −1
    assert reward_of(built, "d-1") == -1.0
    fb = rating_row(built, "d-1")
    assert (fb["scale"], fb["attributes"]["scale_evidence"], fb["attributes"]["reading"]) == (
        "1-5",
        "was_good_decision",
        "ok",
    )
    (kto,) = released(built, "kto", "d-1")
    assert (kto["reward"], kto["label"], kto["outcome_was_good"]) == (-1.0, False, False)
    (dec,) = released(built, "decisions", "d-1")
    assert (dec["outcome_reward"], dec["outcome_was_good"]) == (-1.0, False)


def test_rating_1_by_a_rater_whose_other_ratings_exceed_1_is_the_bottom_of_1_5(tmp_path):
    records = [
        # no wasGoodDecision: only the rater can settle it; d-2 is the same rater ("user" in dataset
        # continuum)
        record("d-1", outcome=rated(1, rated_by="user")),
        record("d-2", outcome=rated(4, rated_by="user"), minute=1),
    ]
    built = build(tmp_path, records)
    assert reward_of(built, "d-1") == -1.0  # 1–5: (1 − 1) / 4 = 0 → −1
    assert reward_of(built, "d-2") == 0.5  # 1–5: (4 − 1) / 4 = 0.75 → 2·0.75 − 1 = 0.5
    assert rating_row(built, "d-1")["attributes"]["scale_evidence"] == "rater"
    assert rating_row(built, "d-2")["attributes"]["scale_evidence"] == "value"


def test_rating_1_in_a_file_with_fractional_ratings_is_the_top_of_0_1(tmp_path):
    records = [
        record("d-1", outcome=rated(1, rated_by="community")),  # the only "community" rating
        record("d-2", outcome=rated(0.4, rated_by="system"), minute=1),  # another rater, same file
    ]
    built = build(tmp_path, records)
    assert reward_of(built, "d-1") == 1.0  # 0–1: n = 1 → 2·1 − 1 = +1
    assert reward_of(built, "d-2") == pytest.approx(-0.2)  # 0–1: 2·0.4 − 1 = −0.2
    fb = rating_row(built, "d-1")
    assert (fb["scale"], fb["attributes"]["scale_evidence"]) == ("[0,1]", "file")


def test_self_ratings_are_evidence_only_for_the_same_actor(tmp_path):
    """`ratedBy: self` is the deciding actor: another persona's self-ratings say nothing about
    this one's scale."""
    records = [
        record("d-1", outcome=rated(1, rated_by="self"), actor="persona-helper"),
        record(
            "d-2",
            outcome=rated(4, rated_by="self"),
            actor="persona-teacher",
            minute=1,
            session="s-2",
        ),
    ]
    more = {
        "elsewhere/other.jsonl": [
            record(
                "d-3",
                outcome=rated(0.3, rated_by="self"),
                actor="persona-helper",
                session="s-3",
                minute=2,
            )
        ]
    }
    built = build(tmp_path, records, more=more)
    # d-1's file holds a 4 (1–5) but its rater (self = persona-helper, dataset continuum) has no
    # other rating; persona-helper's 0.3 is in another dataset ("elsewhere"), so it is not the same
    # rater either.
    fb = rating_row(built, "d-1")
    assert (fb["scale"], fb["attributes"]["scale_evidence"]) == ("1-5", "file")
    assert reward_of(built, "d-1") == -1.0


def test_rating_scale_setting_for_the_dataset_settles_a_lone_1(tmp_path):
    config = ALL_TRAIN + '[decision.rating_scale]\narena = "1-5"\n'
    built = build(
        tmp_path,
        [record("d-1", outcome=rated(1))],
        dataset="arena",
        config=config,
        more={"lobby/export.jsonl": [record("d-2", outcome=rated(1), session="s-2")]},
    )
    assert reward_of(built, "d-1") == -1.0  # arena is set to 1–5: (1 − 1) / 4 = 0 → −1
    assert rating_row(built, "d-1")["attributes"]["scale_evidence"] == "setting"
    assert reward_of(built, "d-2") is None  # lobby has no setting and no other evidence


def test_setting_wins_over_the_raters_other_ratings(tmp_path):
    config = ALL_TRAIN + '[decision.rating_scale]\ncontinuum = "0-1"\n'
    records = [
        record("d-1", outcome=rated(1, rated_by="user")),
        record("d-2", outcome=rated(4, rated_by="user"), minute=1),
    ]
    built = build(tmp_path, records, config=config)
    assert reward_of(built, "d-1") == 1.0  # the setting says 0–1: n = 1 → +1
    assert reward_of(built, "d-2") is None  # a 4 does not exist on the configured 0–1 scale
    assert rating_row(built, "d-2")["attributes"]["reading"] == "off_scale"


def test_ambiguous_rating_1_without_evidence_yields_no_reward(tmp_path):
    """wasGoodDecision true does not settle a 1: it may be the bottom of 1–5 with a default
    `true`."""
    built = build(tmp_path, [record("d-1", outcome=rated(1, was_good=True))])
    assert reward_of(built, "d-1") is None
    fb = rating_row(built, "d-1")
    assert (fb["scale"], fb["attributes"]["scale_evidence"], fb["attributes"]["reading"]) == (
        "unknown",
        "none",
        "scale_unknown",
    )
    assert released(built, "kto", "d-1") == []
    (dec,) = released(built, "decisions", "d-1")
    assert (dec["outcome_reward"], dec["outcome_was_good"]) == (None, True)


def test_conflicting_evidence_leaves_the_scale_unknown(tmp_path):
    records = [
        record("d-1", outcome=rated(1, rated_by="user")),
        record("d-2", outcome=rated(4, rated_by="user"), minute=1),
        record("d-3", outcome=rated(0.25, rated_by="user"), minute=2),
    ]
    built = build(tmp_path, records)
    # rater "user" has a 4 (1–5) and a 0.25 (0–1), so does the file: no evidence either way, no
    # wasGoodDecision
    assert reward_of(built, "d-1") is None
    assert rating_row(built, "d-1")["attributes"]["reading"] == "scale_unknown"
    # values ≠ 1 settle themselves: (4 − 1) / 4 = 0.75 → 0.5; 2·0.25 − 1 = −0.5
    assert (reward_of(built, "d-2"), reward_of(built, "d-3")) == (0.5, -0.5)


def test_rating_that_contradicts_was_good_decision_yields_no_reward(tmp_path):
    records = [
        # 1–5: (5 − 1) / 4 = 1 → +1, but "not a good decision"
        record("d-1", outcome=rated(5, was_good=False)),
        # 0–1: 2·0.2 − 1 = −0.6, but "good"
        record("d-2", outcome=rated(0.2, was_good=True), minute=1),
        # 1–5: (3 − 1) / 4 = 0.5 → 0: no sign to contradict
        record("d-3", outcome=rated(3, was_good=False), minute=2),
    ]
    built = build(tmp_path, records)
    assert reward_of(built, "d-1") is None and reward_of(built, "d-2") is None
    assert rating_row(built, "d-1")["attributes"]["reading"] == "contradicts_was_good_decision"
    assert reward_of(built, "d-3") == 0.0
    assert {
        f["name"]
        for f in built.silver["feedback"].filter(pl.col("decision_id") == "d-1").to_dicts()
    } == {"rating", "was_good_decision"}  # the feedback rows stay


def test_was_good_decision_gives_the_reward_when_there_is_no_rating(tmp_path):
    records = [
        record("d-1", outcome=rated(was_good=True)),
        record("d-2", outcome=rated(was_good=False), minute=1),
    ]
    built = build(tmp_path, records)
    # was_good_rewards: true +1, false −1
    assert (reward_of(built, "d-1"), reward_of(built, "d-2")) == (1.0, -1.0)


def test_rating_is_normalized_by_its_scale_then_signed(tmp_path):
    records = [
        record("d-1", outcome=rated(2, was_good=False)),
        record("d-2", outcome=rated(0.9, was_good=True), minute=1),
    ]
    built = build(tmp_path, records)
    assert reward_of(built, "d-1") == -0.5  # (2 − 1) / 4 = 0.25 → 2·0.25 − 1 = −0.5
    assert reward_of(built, "d-2") == pytest.approx(0.8)  # 2·0.9 − 1 = 0.8
    assert built.gold["turn_rewards"]["reward_rule"].unique().to_list() == ["decision_outcome@2"]


# ---------------------------------------------------------------- companion suggestions


def human(
    decision_id: str, action: str, suggestion: dict, outcome: dict | None = None, minute: int = 0
) -> dict:
    return record(
        decision_id,
        actor="user-ana",
        actor_type="human",
        action=action,
        suggestion=suggestion,
        outcome=outcome,
        minute=minute,
    )


def test_suggestion_followed_takes_the_sources_was_followed(tmp_path):
    records = [
        human(
            "d-1", "POSTED", {"suggestedAction": "posted", "confidence": 0.7, "wasFollowed": True}
        ),
        # the source says followed although the words differ: its own word wins
        human(
            "d-2",
            "SILENT",
            {"suggestedAction": "STAY_QUIET", "confidence": 0.6, "wasFollowed": True},
            minute=1,
        ),
    ]
    built = build(tmp_path, records)
    followed = dict(
        built.silver["decisions"].select("decision_id", "suggestion_followed").iter_rows()
    )
    assert followed == {"d-1": True, "d-2": True}
    assert override_pairs(built) == []
    assert built.silver["feedback"].filter(pl.col("name") == "suggestion_overridden").height == 0


def test_actions_compare_case_insensitively_when_was_followed_is_missing(tmp_path):
    records = [
        human("d-1", "POSTED", {"suggestedAction": " posted ", "confidence": 0.7}),
        human("d-2", "SILENT", {"suggestedAction": "POSTED", "confidence": 0.7}, minute=1),
    ]
    built = build(tmp_path, records)
    followed = dict(
        built.silver["decisions"].select("decision_id", "suggestion_followed").iter_rows()
    )
    assert followed == {"d-1": True, "d-2": False}
    assert [p["decision_id"] for p in override_pairs(built)] == ["d-2"]


def test_override_pair_is_not_built_when_the_outcome_rates_the_human_choice_bad(tmp_path):
    suggestion = {"suggestedAction": "POSTED", "confidence": 0.8, "wasFollowed": False}
    records = [
        # (2 − 1) / 4 = 0.25 → −0.5 < 0
        human("d-1", "SILENT", suggestion, outcome=rated(2, was_good=False)),
        human("d-2", "SILENT", suggestion, outcome=rated(was_good=False), minute=1),  # −1 < 0
    ]
    built = build(tmp_path, records)
    assert (reward_of(built, "d-1"), reward_of(built, "d-2")) == (-0.5, -1.0)
    assert override_pairs(built) == []


def test_override_pair_prefers_the_human_action_and_carries_both_rewards(tmp_path):
    suggestion = {
        "suggestedAction": "POSTED",
        "confidence": 0.8,
        "reasoning": "You were named.",
        "wasFollowed": False,
    }
    later = HISTORY + [{"role": "user", "name": "Joel", "content": "Still red?"}]
    records = [
        human("d-1", "SILENT", suggestion, outcome=rated(5, was_good=True)),  # (5 − 1) / 4 = 1 → +1
        # unrated: the override itself is the evidence. Asked after one more message: with d-1's
        # context its pair would be d-1's exactly (prompt, chosen, rejected), released once.
        human("d-2", "SILENT", suggestion, minute=1)
        | {"ragContext": {"identity": {"systemPrompt": PROMPT}, "conversationHistory": later}},
    ]
    built = build(tmp_path, records)
    pairs = {p["decision_id"]: p for p in override_pairs(built)}
    assert set(pairs) == {"d-1", "d-2"}
    assert (pairs["d-1"]["reward_chosen"], pairs["d-1"]["reward_rejected"]) == (1.0, None)
    assert (pairs["d-2"]["reward_chosen"], pairs["d-2"]["reward_rejected"]) == (None, None)
    assert pairs["d-1"]["chosen"][-1]["content"] == '{"action":"SILENT"}'
    assert pairs["d-1"]["rejected"][-1]["content"] == '{"action":"POSTED"}'


def test_no_override_pair_when_the_outcome_is_recorded_but_gives_no_reward(tmp_path):
    """A contradictory or unreadable outcome may rate the human's choice bad: no pair on a guess."""
    suggestion = {"suggestedAction": "POSTED", "confidence": 0.8, "wasFollowed": False}
    built = build(tmp_path, [human("d-1", "SILENT", suggestion, outcome=rated(1, was_good=True))])
    assert reward_of(built, "d-1") is None
    assert override_pairs(built) == []


def test_ai_persona_differing_from_a_suggestion_is_not_a_human_override(tmp_path):
    built = build(
        tmp_path,
        [
            record(
                "d-1",
                action="SILENT",
                suggestion={"suggestedAction": "POSTED", "wasFollowed": False},
            )
        ],
    )
    assert override_pairs(built) == []


# ---------------------------------------------------------------- decision prompts (seed 004 model
# input)


def test_decision_prompt_carries_ambient_state_coordination_snapshot_and_the_suggestion_seen(
    tmp_path,
):
    suggestion = {
        "suggestedAction": "POSTED",
        "confidence": 0.7,
        "reasoning": "You were named.",
        "wasFollowed": False,
    }
    rec = human("d-1", "SILENT", suggestion, outcome=rated(5, was_good=True))
    rec["ambientState"] = {"userPresent": True, "temperature": 0.6, "mentionedByName": True}
    rec["coordinationSnapshot"] = {
        "phase": "deciding",
        "othersConsideringCount": 1,
        "othersConsideringNames": ["Teacher AI"],
    }
    built = build(tmp_path, [rec])
    (dec,) = released(built, "decisions", "d-1")
    # one system message: identity, then a labelled context block in canonical JSON (sorted keys,
    # compact); the suggestion as the actor saw it, without `wasFollowed` (that is the label, not
    # the input)
    assert dec["prompt"][0] == {
        "role": "system",
        "content": (
            "You are Helper AI. Answer briefly.\n\n"
            "[decision context]\n"
            'ambient state: {"mentionedByName":true,"temperature":0.6,"userPresent":true}\n'
            'coordination snapshot: {"othersConsideringCount":1,"othersConsideringNames":["Teacher '
            'AI"],"phase":"deciding"}\n'
            'companion suggestion: {"confidence":0.7,"reasoning":"You were '
            'named.","suggestedAction":"POSTED"}'
        ),
    }
    # the history speaker's name is a name the episode knows: released as [PERSON] (issue 38)
    assert dec["prompt"][1] == {
        "role": "user",
        "content": "[PERSON]: Is the widget build red again?",
    }
    (kto,) = released(built, "kto", "d-1")
    assert kto["prompt"][0] == dec["prompt"][0]


def test_decision_prompt_without_context_parts_is_the_system_prompt_alone(tmp_path):
    built = build(tmp_path, [record("d-1", outcome=rated(5, was_good=True))])
    (dec,) = released(built, "decisions", "d-1")
    assert dec["prompt"][0] == {"role": "system", "content": PROMPT}


# ---------------------------------------------------------------- extra seed fields


def test_alternatives_with_values_become_candidates(tmp_path):
    alternatives = [
        {
            "action": "SILENT",
            "confidence": 0.3,
            "reasoning": "others answer",
            "whyNotChosen": "named",
        }
    ]
    built = build(
        tmp_path,
        [
            record(
                "d-1",
                action="POSTED",
                confidence=0.8,
                decision_extra={"alternatives": alternatives},
            )
        ],
    )
    (row,) = built.silver["decisions"].to_dicts()
    # the chosen action with its confidence, then each alternative with its own
    assert row["candidates"] == [
        {"action": "POSTED", "value": 0.8},
        {"action": "SILENT", "value": 0.3},
    ]
    # kept whole too, as JSON text in the attributes
    assert json.loads(json.loads(row["attributes"])["alternatives"]) == alternatives


def test_alternatives_without_values_stay_in_attributes(tmp_path):
    alternatives = [{"action": "SILENT", "reasoning": "others answer"}]
    # top-level, as the seed sketches it
    built = build(tmp_path, [record("d-1", alternatives=alternatives)])
    (row,) = built.silver["decisions"].to_dicts()
    assert row["candidates"] is None
    assert json.loads(json.loads(row["attributes"])["alternatives"]) == alternatives


def test_follow_up_and_long_term_outcome_are_later_signals_that_leave_the_reward_alone(tmp_path):
    outcome = rated(4, was_good=True) | {
        "followUp": {
            "conversationContinued": True,
            "userSatisfaction": 0.9,
            "mistakeCorrected": False,
        }
    }
    long_term = {
        "finalOutcome": "poor",
        "checkpoints": [{"timestamp": 1742000000000, "metric": "retention", "value": 0.2}],
    }
    consensus = {
        "participants": ["a", "b"],
        "votes": {"a": "POSTED", "b": "SILENT"},
        "finalDecision": "majority",
    }
    built = build(
        tmp_path, [record("d-1", outcome=outcome, longTermOutcome=long_term, consensus=consensus)]
    )
    fb = {
        r["name"]: r
        for r in built.silver["feedback"].filter(pl.col("decision_id") == "d-1").to_dicts()
    }
    assert set(fb) == {
        "rating",
        "was_good_decision",
        "follow_up_conversation_continued",
        "follow_up_user_satisfaction",
        "follow_up_mistake_corrected",
        "long_term_outcome",
    }
    assert (
        fb["follow_up_conversation_continued"]["value_num"],
        fb["follow_up_mistake_corrected"]["value_num"],
    ) == (1.0, 0.0)
    assert fb["follow_up_user_satisfaction"]["value_num"] == 0.9
    assert (fb["long_term_outcome"]["value_text"], fb["long_term_outcome"]["scale"]) == (
        "poor",
        "category",
    )
    assert (
        json.loads(fb["long_term_outcome"]["attributes"])["checkpoints"] == long_term["checkpoints"]
    )
    assert reward_of(built, "d-1") == 0.5  # the rating alone: (4 − 1) / 4 = 0.75 → 0.5
    attributes = json.loads(built.silver["decisions"]["attributes"][0])
    assert json.loads(attributes["consensus"]) == consensus
    assert json.loads(attributes["long_term_outcome"]) == long_term


def test_extra_fields_are_read_from_sqlite_json_text_columns(tmp_path):
    raw = tmp_path / "raw"
    path = raw / "decisions" / "continuum" / "db.sqlite"
    path.parent.mkdir(parents=True)
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE coordination_decisions (id TEXT, timestamp INTEGER, actor_id TEXT, "
        "actor_type TEXT,"
        " decision TEXT, outcome TEXT, metadata TEXT, alternatives TEXT, consensus TEXT, "
        "long_term_outcome TEXT)"
    )
    conn.execute(
        "INSERT INTO coordination_decisions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            "d-1",
            1741000000000,
            "persona-helper",
            "ai-persona",
            json.dumps({"action": "SILENT", "confidence": 0.6}),
            json.dumps(
                {
                    "wasGoodDecision": True,
                    "ratedBy": "self",
                    "followUp": {"conversationContinued": False},
                }
            ),
            json.dumps({"sessionId": "s-1"}),
            json.dumps([{"action": "POSTED", "confidence": 0.4}]),
            json.dumps({"finalDecision": "unanimous"}),
            json.dumps({"finalOutcome": "good"}),
        ),
    )
    conn.commit()
    conn.close()
    built = run_pipeline(raw, tmp_path / "data")
    (row,) = built.silver["decisions"].to_dicts()
    assert row["candidates"] == [
        {"action": "SILENT", "value": 0.6},
        {"action": "POSTED", "value": 0.4},
    ]
    attributes = json.loads(row["attributes"])
    assert (
        json.loads(attributes["consensus"]) == {"finalDecision": "unanimous"}
        and attributes["extra"] is None
    )
    names = set(built.silver["feedback"]["name"].to_list())
    assert {"follow_up_conversation_continued", "long_term_outcome", "was_good_decision"} <= names
