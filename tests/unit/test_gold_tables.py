"""quality_signals, episode_outcomes, agent_round_deltas, provenance and parameters on tiny
frames."""

from datetime import UTC, datetime, timedelta

import polars as pl
import pytest

from pipelines.gold import build_gold, quality
from pipelines.gold.agent_deltas import build_agent_round_deltas
from pipelines.gold.params import parse_overrides
from pipelines.gold.provenance import reward_problems
from pipelines.gold.quality import build_quality_signals, is_json_document
from pipelines.gold.registry import get_rule
from pipelines.schemas.gold import GOLD_MODELS
from tests.unit._gold_helpers import params, silver_tables

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
EP = "dialogue:d/c"


def _turns(*texts_roles, ts_step=None):
    return [
        {
            "turn_id": f"{EP}#{i}",
            "episode_id": EP,
            "turn_index": i,
            "role": role,
            "text": text,
            "internal": False,
            "ts": None if ts_step is None else T0 + timedelta(seconds=ts_step * i),
        }
        for i, (role, text) in enumerate(texts_roles)
    ]


def _quality(rows, **overrides):
    return {
        r["turn_id"]: r
        for r in build_quality_signals(
            silver_tables(turns=rows)["turns"], params(**overrides)["quality"]
        ).iter_rows(named=True)
    }


def test_quality_counts_words_and_latency_from_timestamps():
    q = _quality(
        _turns(
            ("user", "Where is my parcel?"),
            ("assistant", "It's in Lyon, arriving Monday."),
            ts_step=90,
        )
    )
    assert q[f"{EP}#0"]["word_count"] == 4 and q[f"{EP}#1"]["word_count"] == 5
    assert q[f"{EP}#0"]["response_seconds"] is None and q[f"{EP}#1"]["response_seconds"] == 90.0


def test_correction_and_new_context_lexicons_are_whole_word_case_insensitive_and_user_only():
    q = _quality(
        _turns(
            ("user", "ACTUALLY the date is wrong."),
            ("assistant", "Actually, noted."),
            ("user", "Factually fine; I forgot to  mention the gate code."),
            ("user", "Also bring a ladder."),
        )
    )
    assert q[f"{EP}#0"]["is_correction"] is True and q[f"{EP}#0"]["is_new_context"] is False
    assert q[f"{EP}#1"]["is_correction"] is None  # assistant turns are not scanned
    assert q[f"{EP}#2"]["is_correction"] is False  # "Factually" is not the word "actually"
    assert q[f"{EP}#2"]["is_new_context"] is True and q[f"{EP}#3"]["is_new_context"] is True


def test_a_turns_own_attributes_win_over_the_lexicons_and_timestamps_on_user_turns_only():
    rows = _turns(
        ("user", "All good, go ahead."),
        ("assistant", "Sure."),
        ("user", "That is wrong."),
        ("user", "Nothing else."),
        ts_step=60,
    )
    rows[0]["attributes"] = '{"response_seconds":"12.5","response_seconds_basis":"decision"}'
    rows[1]["attributes"] = '{"source_correction":true,"new_strategic_context":true}'
    rows[2]["attributes"] = '{"note":"x","source_correction":false}'
    # a key with a letter written as an escape is the same key
    rows[3]["attributes"] = (
        '{"new_strategic_\\u0063ontext":true,"response_seconds_basis":"unknown"}'
    )
    q = _quality(rows)
    # the source's word, not the gap (turn 0 has no earlier turn; turn 3's basis is unknown)
    assert [q[f"{EP}#{i}"]["response_seconds"] for i in range(4)] == [12.5, 60.0, 60.0, None]
    # an assistant turn is not scanned, whatever its attributes say
    assert (q[f"{EP}#1"]["is_correction"], q[f"{EP}#1"]["is_new_context"]) == (None, None)
    # "wrong" in the text, but the source says no correction
    assert q[f"{EP}#2"]["is_correction"] is False
    assert q[f"{EP}#3"]["is_new_context"] is True  # no lexicon term, the source's flag


def test_lexicons_are_configurable():
    q = _quality(
        _turns(("user", "Oops, scratch that.")), quality={"correction_terms": ["scratch that"]}
    )
    assert q[f"{EP}#0"]["is_correction"] is True


def test_json_adherence_is_checked_only_for_answers_to_a_json_request():
    q = _quality(
        _turns(
            ("user", "Return the totals as JSON please."),
            ("assistant", '```json\n{"total": 3}\n```'),
            ("user", "Now return JSON for March."),
            ("assistant", "Sure! Total is 4."),
            ("user", "Thanks."),
            ("assistant", "You're welcome."),
        )
    )
    assert (q[f"{EP}#1"]["json_requested"], q[f"{EP}#1"]["json_valid"]) == (True, True)
    assert (q[f"{EP}#3"]["json_requested"], q[f"{EP}#3"]["json_valid"]) == (True, False)
    assert (q[f"{EP}#5"]["json_requested"], q[f"{EP}#5"]["json_valid"]) == (False, None)
    assert is_json_document("[1, 2]") and not is_json_document('"just a string"')


def test_json_documents_are_parsed_only_for_the_requested_answers(monkeypatch):
    parsed = []

    def counting(text):
        parsed.append(text)
        return is_json_document(text)

    monkeypatch.setattr(quality, "is_json_document", counting)
    _quality(
        _turns(
            ("user", "Return the totals as JSON please."),
            ("assistant", '{"total": 3}'),
            ("user", "Thanks."),
            ("assistant", "You're welcome."),
            ("assistant", "Anything else?"),
        )
    )
    assert parsed == ['{"total": 3}']


def test_echo_rate_is_the_share_of_reply_words_found_in_the_prompt():
    q = _quality(_turns(("user", "reset the router"), ("assistant", "Reset the modem now")))
    assert q[f"{EP}#1"]["echo_rate"] == pytest.approx(
        2 / 4
    )  # {reset, the} of {reset, the, modem, now}
    assert q[f"{EP}#0"]["echo_rate"] is None


def test_episode_outcomes_sum_rewards_into_the_return_and_count_signals():
    silver = silver_tables(
        episodes=[
            {
                "episode_id": "study:s",
                "source": "study",
                "native_id": "s",
                "group_id": "p",
                "n_turns": 4,
                "end_reason": "agreement",
                "source_file": "f",
            },
            {
                "episode_id": "scenario:x",
                "source": "scenario",
                "native_id": "x",
                "group_id": "x",
                "n_turns": 0,
                "source_file": "f",
                "attributes": '{"metadata":{"scenario_successful":true}}',
            },
        ],
        feedback=[
            {
                "feedback_id": f"j{k}",
                "episode_id": "study:s",
                "turn_id": f"study:s#{2 * k - 1}",
                "decision_id": f"d{k}",
                "target": "turn",
                "name": "judge_stance",
                "value_num": 0.9,
                "value_text": s,
                "scale": "category",
                "source_kind": "judge",
                "attributes": f'{{"step":{k}}}',
            }
            for k, s in ((1, "NEUTRAL"), (2, "AGREE"))
        ],
        decisions=[
            {"decision_id": "d1", "episode_id": "study:s"},
            {"decision_id": "d2", "episode_id": "study:s"},
        ],
    )
    gold = build_gold(silver, params())
    outcomes = {r["episode_id"]: r for r in gold["episode_outcomes"].iter_rows(named=True)}
    study = outcomes["study:s"]
    assert study["terminal_reward"] == 1.0 and study["terminal_rule"] == "study_terminal@2"
    assert study["return"] == pytest.approx(1.0 + 0.5) and study["n_rewards"] == 2
    assert (study["n_signals"], study["n_judge_signals"], study["n_human_signals"]) == (2, 2, 0)
    assert (
        outcomes["scenario:x"]["return"] is None
        and '"scenario_successful":true' in outcomes["scenario:x"]["outcome"]
    )
    for table, frame in gold.items():
        GOLD_MODELS[table].validate(frame, lazy=True)
    assert reward_problems(gold["turn_rewards"], silver["feedback"]) == {}


def test_agent_round_deltas_are_computed_per_agent_and_compared_with_reported_ones():
    rounds = silver_tables(
        agent_rounds=[
            {
                "episode_id": "social_rl:r/round1",
                "agent_id": "A",
                "round_number": 1,
                "engagement": 0.1,
            },
            {
                "episode_id": "social_rl:r/round2",
                "agent_id": "A",
                "round_number": 2,
                "engagement": 0.6,
                "reported_engagement_delta": 0.5,
            },
            {
                "episode_id": "social_rl:r/round3",
                "agent_id": "A",
                "round_number": 3,
                "engagement": 0.7,
                "reported_engagement_delta": 0.3,
            },
        ],
        episodes=[
            {
                "episode_id": f"social_rl:r/round{n}",
                "source": "social_rl",
                "native_id": "n",
                "group_id": "experiment:e",
                "n_turns": 0,
                "source_file": "f",
            }
            for n in (1, 2, 3)
        ],
    )
    deltas = build_agent_round_deltas(rounds["agent_rounds"], rounds["episodes"]).sort(
        "round_number"
    )
    assert deltas["engagement_delta"].to_list() == [None, 0.5, 0.1]
    assert deltas["deltas_agree"].to_list() == [None, True, False]
    assert deltas["previous_round_number"].to_list() == [None, 1, 2]


def test_provenance_finds_rewards_without_feedback_unknown_rules_and_out_of_range_values():
    rewards = pl.DataFrame(
        {
            "reward_id": ["a", "b", "c"],
            "reward": [0.5, 1.5, 0.0],
            "reward_rule": ["dialogue_feedback@1", "dialogue_feedback@1", "made_up@9"],
            "feedback_ids": [["f1"], ["gone"], []],
        }
    )
    feedback = pl.DataFrame({"feedback_id": ["f1"]})
    assert reward_problems(rewards, feedback) == {
        "reward_outside_minus1_1": 1,
        "reward_without_feedback": 1,
        "feedback_id_not_in_feedback": 1,
        "reward_without_known_rule": 1,
    }


def test_overrides_parse_from_json_or_toml_and_merge_table_by_table():
    assert parse_overrides('{"aggregation": {"method": "median"}}') == parse_overrides(
        '[aggregation]\nmethod = "median"'
    )
    merged = params(**parse_overrides('{"social_rl_feedback": {"weights": {"engagement": 2.0}}}'))
    assert merged["social_rl_feedback"]["weights"] == {
        "engagement": 2.0,
        "theoretical_alignment": 1.0,
        "contribution_value": 1.0,
    }


def test_unknown_rule_in_rewards_toml_is_an_error_naming_the_known_rules():
    with pytest.raises(KeyError, match="dialogue_feedback@1"):
        get_rule("dialogue_feedback@7")
