"""Scenario (moderator ↔ user) semantics, end to end on tiny hand-written dialog files.

Each scenario folder below is the input of the test named after its rule; the pipeline runs once
over all of them (ingest → silver → gold → splits → release). Expected values are worked out by
hand in the
comments: scenario_outcome = Σ wᵢ·xᵢ / Σ wᵢ with user_validated / validated_output 2v−1 (w 1),
user_satisfaction_score 2s−1 (w 1), correction_magnitude minor −0.25 / moderate −0.5 / major −1
(w 0.5), moderator_effectiveness excellent 1 / good 0.333 / fair −0.333 / poor −1 (w 0.25).
"""

from __future__ import annotations

import json

import polars as pl
import pytest

from pipelines.ingest.log import current_parts
from pipelines.storage.layout import Layout
from tests.conformance.harness import Built, run_pipeline, write_jsonl


def at(minute: int) -> str:
    return f"2025-11-21T15:{minute:02d}:00Z"


def checkpoint(minute: int, number: int | None, moderator: str, user: str, **fields) -> dict:
    """A documented checkpoint entry of phase_1 (object messages, as in the seed's example)."""
    context = {"checkpoint_number": number} if number is not None else {}
    signals = fields.pop("signals", {})
    return {
        "timestamp": at(minute),
        "interaction_type": fields.pop("interaction_type", "checkpoint"),
        "phase": "phase_1",
        "round": 1,
        "context": context,
        "moderator_message": {"content": moderator, "message_type": "checkpoint_prompt"},
        "user_response": {
            "content": user,
            "response_type": fields.pop("response_type", "approval"),
            "signals": signals,
        },
        **fields,
    }


def intro(company: str) -> dict:
    """Round one of a scenario (each scenario its own company: no two share a prompt)."""
    return checkpoint(
        0,
        1,
        f"Round one for {company}: the economist sees stable demand. Anything to add?",
        "Looks good, proceed.",
        outcome={"user_validated": True},
    )


ROUND_TWO = "Round two: the economist expects input costs to stay flat."
REVISED_TWO = "Revised round two: the economist now expects input costs to stay volatile."
# (scenario 106 has its own texts: a release keeps one copy of identical pairs)
WORKFORCE = "Round two: the demographer expects a stable workforce."
REVISED_WORKFORCE = "Revised round two: the demographer now expects a shrinking workforce."
CORRECTION = {"provided_correction": True, "correction_magnitude": "moderate"}
# rejected answer: validated false −1, satisfaction 0.4 → −0.2, moderate −0.5 × 0.5 → (−1 − 0.2 −
# 0.25) / 2.5 = −0.58
CORRECTED_OUTCOME = {"user_validated": False, "user_satisfaction_score": 0.4}
ACKNOWLEDGEMENT = {
    "timestamp": at(12),
    "interaction_type": "clarification",
    "phase": "phase_1",
    "moderator_message": {
        "content": "Noted, the specialists will re-run round two with that.",
        "message_type": "clarification",
    },
    "user_response": "ok",
}


def corrected_round_two(minute: int = 10) -> dict:
    return checkpoint(
        minute,
        2,
        ROUND_TWO,
        "That is wrong: costs are not flat, our energy contracts end this winter.",
        response_type="correction",
        signals=CORRECTION,
        outcome=CORRECTED_OUTCOME,
        moderator_action={"significance_evaluation": "major", "proposed_action": "re-round"},
        user_decision={"decision": "proceed_with_reround", "decision_time_seconds": 40},
    )


SCENARIOS: dict[str, list[dict]] = {
    # decisions compared by meaning
    "SCENARIO-2025-101": [
        checkpoint(
            0,
            1,
            "Round one is in.",
            "Fine.",
            moderator_action={"proposed_action": "proceed"},
            user_decision={"decision": "proceed_without_reround", "decision_time_seconds": 12},
        ),
        checkpoint(
            10,
            2,
            "Round two is in.",
            "Redo it.",
            moderator_action={"proposed_action": "re-round"},
            user_decision={"decision": "proceed_with_reround"},
        ),
        checkpoint(
            20,
            3,
            "Round three is in.",
            "Move on.",
            moderator_action={"proposed_action": "re-round"},
            user_decision={"decision": "proceed_without_reround"},
        ),
        checkpoint(
            30,
            4,
            "Round four is in.",
            "Four of them.",
            moderator_action={"proposed_action": "consult_three"},
            user_decision={"decision": "consult_four"},
        ),
    ],
    # correction with the moderator's revised answer to the same checkpoint (after an
    # acknowledgement)
    "SCENARIO-2025-102": [
        intro("a dairy cooperative"),
        corrected_round_two(),
        ACKNOWLEDGEMENT,
        # chosen answer: validated true +1, satisfaction 0.9 → +0.8: (1 + 0.8) / 2 = 0.9
        checkpoint(
            20,
            2,
            REVISED_TWO,
            "Yes, that is right.",
            outcome={"user_validated": True, "user_satisfaction_score": 0.9},
        ),
    ],
    # correction, acknowledgement, and no revised answer
    "SCENARIO-2025-103": [intro("a water utility"), corrected_round_two(), ACKNOWLEDGEMENT],
    # a reply the lexicon would call a correction, without the source's flag, then a revision of the
    # checkpoint
    "SCENARIO-2025-104": [
        intro("a chip packager"),
        {
            **checkpoint(10, 2, ROUND_TWO, "Actually, that is not how our costs work."),
            "user_response": "Actually, that is not how our costs work.",
        },
        checkpoint(20, 2, REVISED_TWO, "Yes.", outcome={"user_validated": True}),
    ],
    # the revision is judged worse than the answer it replaces
    "SCENARIO-2025-105": [
        intro("a port operator"),
        corrected_round_two(),
        # validated false −1, satisfaction 0.1 → −0.8, major −1 × 0.5: (−1 − 0.8 − 0.5) / 2.5 =
        # −0.92 < −0.58
        checkpoint(
            20,
            2,
            REVISED_TWO,
            "Still not right.",
            response_type="correction",
            signals={"provided_correction": True, "correction_magnitude": "major"},
            outcome={"user_validated": False, "user_satisfaction_score": 0.1},
        ),
    ],
    # a hook-logged user_correction after an approved checkpoint, an acknowledgement, then the
    # revision
    "SCENARIO-2025-106": [
        intro("a hospital group"),
        # validated true +1 (this entry) and false −1 (the hook entry judges the same turn): 0 / 2 =
        # 0
        checkpoint(10, 2, WORKFORCE, "Fine.", outcome={"user_validated": True}),
        {
            "timestamp": at(11),
            "interaction_type": "user_correction",
            "outcome": {"user_validated": False},
            "user_message": {
                "content": "But the supplier risk is understated, change that.",
                "message_type": "user_correction",
            },
        },
        ACKNOWLEDGEMENT,
        # validated true +1, satisfaction 0.8 → +0.6: (1 + 0.6) / 2 = 0.8
        checkpoint(
            20,
            2,
            REVISED_WORKFORCE,
            "Better.",
            outcome={"user_validated": True, "user_satisfaction_score": 0.8},
        ),
    ],
    # lexicon and labels on plain-string replies (no signals): praise, a hedged correction
    "SCENARIO-2025-107": [
        {
            "timestamp": at(0),
            "interaction_type": "checkpoint",
            "moderator_message": "Round one is in.",
            "user_response": "This is actually great, thank you.",
        },
        {
            "timestamp": at(10),
            "interaction_type": "checkpoint",
            "moderator_message": "Round two is in.",
            "user_response": "Actually, our main market is not retail.",
        },
        {
            "timestamp": at(20),
            "interaction_type": "checkpoint",
            "moderator_message": "Round three is in.",
            "user_response": "No corrections, nothing wrong there.",
        },
    ],
    # the source's flags win over the lexicon
    "SCENARIO-2025-108": [
        checkpoint(
            0,
            1,
            "Round one is in.",
            "Our main market is wholesale.",
            signals={"provided_correction": True},
        ),
        checkpoint(
            10,
            2,
            "Round two is in.",
            "That was the wrong question, but the round is right.",
            signals={"provided_correction": False, "new_strategic_context": True},
        ),
    ],
    # validated_output: alone, and together with user_validated on one entry
    "SCENARIO-2025-109": [
        # validated_output true +1, satisfaction 0.5 → 0: (1 + 0) / 2 = 0.5
        checkpoint(
            0,
            1,
            "Round one is in.",
            "Good.",
            signals={"validated_output": True},
            outcome={"user_satisfaction_score": 0.5},
        ),
        # user_validated true +1 (validated_output of the same entry not counted again),
        # satisfaction 0.5 → 0: 0.5
        checkpoint(
            10,
            2,
            "Round two is in.",
            "Good.",
            signals={"validated_output": True},
            outcome={"user_validated": True, "user_satisfaction_score": 0.5},
        ),
    ],
    # seed signals wherever the logger put them
    "SCENARIO-2025-110": [
        checkpoint(
            0,
            1,
            "Round one is in.",
            "Good, and we just opened a plant in Spain.",
            context={
                "checkpoint_number": 1,
                "synthesis_length_words": 342,
                "specialists_consulted": ["economist"],
            },
            signals={"new_strategic_context": True},
            quality_signals={
                "checkpoint_timing": "well_timed",
                "question_quality": "high",
                "user_engagement_level": "high",
                "feedback_specificity": "specific",
                "engagement_indicators": ["asked_follow_up"],
                "novel_metric": 3,
            },
        ),
        checkpoint(
            10,
            2,
            "Round two is in.",
            "Fine.",
            signals={"feedback_specificity": "vague", "engagement_indicators": {"reply_words": 1}},
            outcome={"checkpoint_timing": "too_early", "iteration_triggered": False},
            quality_signals={"question_quality": 0.25, "user_engagement_level": "low"},
        ),
    ],
}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    root = tmp_path_factory.mktemp("scenario_rules")
    for scenario_id, entries in SCENARIOS.items():
        write_jsonl(
            root / "raw" / "scenarios" / "completed" / scenario_id / "moderator_dialog.jsonl",
            [{**e, "scenario_id": scenario_id} for e in entries],
        )
    return run_pipeline(root / "raw", root / "data")


def turns_of(built: Built, scenario: str) -> pl.DataFrame:
    return (
        built.silver["turns"]
        .filter(pl.col("episode_id") == f"scenario:{scenario}")
        .sort("turn_index")
    )


def turn_id(scenario: str, index: int) -> str:
    return f"scenario:{scenario}#{index}"


def quality(built: Built, scenario: str, index: int) -> dict:
    rows = built.gold["quality_signals"].filter(pl.col("turn_id") == turn_id(scenario, index))
    return rows.row(0, named=True)


def reward(built: Built, scenario: str, index: int) -> float | None:
    rows = built.gold["turn_rewards"].filter(
        (pl.col("turn_id") == turn_id(scenario, index))
        & pl.col("reward_rule").str.starts_with("scenario_outcome@")
    )
    return rows["reward"][0] if rows.height else None


def correction_pairs(built: Built, scenario: str) -> list[dict]:
    pairs = built.datasets.get("preference", pl.DataFrame())
    if pairs.is_empty():
        return []
    return pairs.filter(
        (pl.col("pair_kind") == "correction") & (pl.col("episode_id") == f"scenario:{scenario}")
    ).to_dicts()


def texts(messages: list[dict]) -> list[str]:
    return [m["content"] for m in messages]


# ---------------------------------------------------------------- followed the proposal (item 9)


def followed(built: Built, proposal: str, decision: str) -> bool | None:
    rows = built.silver["decisions"].filter(
        (pl.col("episode_id") == "scenario:SCENARIO-2025-101")
        & (pl.col("suggested_action") == proposal)
        & (pl.col("action") == decision)
    )
    (value,) = rows["suggestion_followed"]
    return value


def test_proceed_without_reround_follows_a_proceed_proposal(built):
    assert followed(built, "proceed", "proceed_without_reround") is True


def test_proceed_with_reround_follows_a_re_round_proposal(built):
    assert followed(built, "re-round", "proceed_with_reround") is True


def test_proceed_without_reround_overrides_a_re_round_proposal(built):
    assert followed(built, "re-round", "proceed_without_reround") is False


def test_decision_wording_outside_the_vocabulary_is_unknown_not_an_override(built):
    assert followed(built, "consult_three", "consult_four") is None


# ---------------------------------------------------------------- response time (item 9)


def test_user_response_seconds_is_the_decision_time(built):
    # entry 0 of 101: moderator #0, user #1 with decision_time_seconds 12 (both turns share one
    # timestamp)
    assert quality(built, "SCENARIO-2025-101", 1)["response_seconds"] == 12.0


def test_user_response_seconds_without_a_decision_time_is_null_not_zero(built):
    # entry 1 of 101 has a decision without decision_time_seconds: its user turn #3 shares the
    # entry's timestamp
    assert quality(built, "SCENARIO-2025-101", 3)["response_seconds"] is None


def test_moderator_response_seconds_is_the_gap_since_the_previous_entry(built):
    # moderator #2 at 15:10, previous turn (user #1) at 15:00: 600 s (unchanged rule, guards the one
    # above)
    assert quality(built, "SCENARIO-2025-101", 2)["response_seconds"] == 600.0


# ---------------------------------------------------------------- correction detection (item 4)


def test_praise_with_actually_is_not_a_correction(built):
    assert quality(built, "SCENARIO-2025-107", 1)["is_correction"] is False


def test_actually_in_a_sentence_that_negates_is_a_lexicon_correction(built):
    assert quality(built, "SCENARIO-2025-107", 3)["is_correction"] is True


def test_denied_correction_terms_are_not_a_correction(built):
    assert quality(built, "SCENARIO-2025-107", 5)["is_correction"] is False


def test_provided_correction_flag_wins_over_the_lexicon(built):
    # "Our main market is wholesale." has no lexicon term; "That was the wrong question ..." has one
    assert quality(built, "SCENARIO-2025-108", 1)["is_correction"] is True
    assert quality(built, "SCENARIO-2025-108", 3)["is_correction"] is False


def test_new_strategic_context_flag_is_the_new_context_signal(built):
    # the reply has no new-context lexicon term ("also", "additionally", "forgot to mention")
    assert quality(built, "SCENARIO-2025-108", 3)["is_new_context"] is True
    assert quality(built, "SCENARIO-2025-110", 1)["is_new_context"] is True


# ---------------------------------------------------------------- correction pairs (item 4, DESIGN
# §5)


def test_correction_pair_chooses_the_revised_answer_to_the_same_checkpoint(built):
    (pair,) = correction_pairs(built, "SCENARIO-2025-102")
    assert texts(pair["rejected"]) == [ROUND_TWO]
    assert texts(pair["chosen"]) == [REVISED_TWO]  # not the acknowledgement that came first
    assert (
        pair["prompt"][-1]["content"] == "Looks good, proceed."
    )  # the conversation before round two
    assert (pair["reward_rejected"], pair["reward_chosen"]) == (
        pytest.approx(-0.58),
        pytest.approx(0.9),
    )


def test_correction_without_a_revised_answer_makes_no_pair(built):
    assert correction_pairs(built, "SCENARIO-2025-103") == []


def test_lexicon_correction_without_the_source_flag_makes_no_pair(built):
    assert quality(built, "SCENARIO-2025-104", 3)["is_correction"] is True  # the lexicon fires ...
    assert correction_pairs(built, "SCENARIO-2025-104") == []  # ... but never makes a pair


def test_correction_pair_whose_revision_is_rewarded_lower_is_dropped(built):
    assert (reward(built, "SCENARIO-2025-105", 2), reward(built, "SCENARIO-2025-105", 4)) == (
        pytest.approx(-0.58),
        pytest.approx(-0.92),
    )
    assert correction_pairs(built, "SCENARIO-2025-105") == []


def test_hook_logged_user_correction_pairs_the_answer_it_follows_with_its_revision(built):
    (pair,) = correction_pairs(built, "SCENARIO-2025-106")
    assert (texts(pair["rejected"]), texts(pair["chosen"])) == ([WORKFORCE], [REVISED_WORKFORCE])
    assert (pair["reward_rejected"], pair["reward_chosen"]) == (
        pytest.approx(0.0),
        pytest.approx(0.8),
    )


# ---------------------------------------------------------------- validated_output
# (scenario_outcome@2)


def test_validated_output_counts_as_validation_where_the_outcome_has_none(built):
    assert reward(built, "SCENARIO-2025-109", 0) == pytest.approx(0.5)


def test_validated_output_and_user_validated_of_one_entry_count_once(built):
    # counted twice it would be (1 + 1 + 0) / 3 = 0.667
    assert reward(built, "SCENARIO-2025-109", 2) == pytest.approx(0.5)


# ---------------------------------------------------------------- seed signals reach silver (item
# 12)


def test_seed_signals_reach_silver_wherever_the_logger_put_them(built):
    rows = (
        built.silver["feedback"]
        .filter(pl.col("episode_id") == "scenario:SCENARIO-2025-110")
        .sort("turn_id", "name")
    )
    got = {
        (r["turn_id"], r["name"]): (r["value_text"], r["value_num"], r["scale"], r["source_kind"])
        for r in rows.iter_rows(named=True)
    }
    moderator_1, user_1 = turn_id("SCENARIO-2025-110", 0), turn_id("SCENARIO-2025-110", 1)
    moderator_2, user_2 = turn_id("SCENARIO-2025-110", 2), turn_id("SCENARIO-2025-110", 3)
    assert got[(moderator_1, "checkpoint_timing")] == ("well_timed", None, "category", "self")
    assert got[(moderator_1, "question_quality")] == ("high", None, "category", "self")
    assert got[(user_1, "user_engagement_level")] == ("high", None, "category", "system")
    assert got[(user_1, "feedback_specificity")] == ("specific", None, "category", "system")
    assert got[(moderator_2, "checkpoint_timing")] == (
        "too_early",
        None,
        "category",
        "self",
    )  # from outcome
    assert got[(moderator_2, "question_quality")] == (
        "0.25",
        0.25,
        "[0,1]",
        "self",
    )  # a number, not a label
    assert got[(moderator_2, "iteration_triggered")] == (None, 0.0, "bool", "outcome")
    assert got[(user_2, "feedback_specificity")] == (
        "vague",
        None,
        "category",
        "system",
    )  # from the reply's signals


def test_synthesis_length_checkpoint_number_and_engagement_indicators_reach_the_turns(built):
    turns = turns_of(built, "SCENARIO-2025-110")
    moderator, user = (json.loads(a) for a in turns["attributes"][:2])
    assert (moderator["synthesis_length_words"], moderator["checkpoint_number"]) == (342, 1)
    assert (user["new_strategic_context"], user["engagement_indicators"]) == (
        True,
        ["asked_follow_up"],
    )
    assert json.loads(turns["attributes"][3])["engagement_indicators"] == {"reply_words": 1}


def test_unknown_fields_of_a_signal_block_are_kept(built):
    layout = Layout(built.settings.data_root)
    bronze = pl.read_parquet(current_parts(layout, "scenario", "scenario_entries"))
    (quality_json,) = bronze.filter(pl.col("scenario_id") == "SCENARIO-2025-110")[
        "quality_signals"
    ].head(1)
    assert json.loads(quality_json)["novel_metric"] == 3
