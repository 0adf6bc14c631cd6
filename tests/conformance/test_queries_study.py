"""Conformance: the study's saved research queries (source document, "Example Research Questions")
against expected rows worked out by hand (or with plain Python) from one small hand-written study.

The fixture: three participants with pre-surveys and post-surveys (A, B in files CCC001 / INC001,
D in CCC002) and one without a participant file (C). Each session's outcome is stated by hand
next to it, from the rules (agreement: AGREE ≥ 0.70; refusal: two REFUSE in a row; the stance at
step k and the end it triggers are credited to step k−1; stance reward 0.5 × (v(k+1) − v(k)) with
AGREE 1, NEUTRAL / UNKNOWN / DELAY 0, REFUSE −1).
"""

from __future__ import annotations

import statistics
from pathlib import Path

import polars as pl
import pytest

from pipelines.storage.layout import Layout
from pipelines.warehouse.queries import saved_queries
from pipelines.warehouse.views import query, write_views
from tests.conformance.harness import run_pipeline, write_json
from tests.conformance.test_study_rules import POLICIES

PIDS = {
    "A": "aaaaaaaa-1111-4111-8111-aaaaaaaaaaaa",
    "B": "bbbbbbbb-2222-4222-8222-bbbbbbbbbbbb",
    "C": "cccccccc-3333-4333-8333-cccccccccccc",
    "D": "dddddddd-4444-4444-8444-dddddddddddd",
}
RESIDENT = {
    "AGREE": "Alright, we will leave now.",
    "REFUSE": "No, I am staying.",
    "NEUTRAL": "How close is it?",
    "UNKNOWN": "I am at home.",
    "DELAY": "Let me pack first.",
}

# (participant, session name, character or strategy, [(stance, confidence, policy)], willing answer)
SESSIONS = [
    ("A", "nonrole_rational-informational_1", "rational-informational", [], "yes"),
    ("A", "nonrole_emotional-relational_2", "emotional-relational", [], "no"),
    # agreement judged at step 2 → credited to step 1 (provide_information); stance s1 0.5 × (1 − 0)
    # = 0.5; return 1.5
    (
        "A",
        "niki_3",
        "niki",
        [("NEUTRAL", 0.6, "provide_information"), ("AGREE", 0.9, "express_urgency")],
        "yes",
    ),
    ("B", "nonrole_rational-informational_4", "rational-informational", [], "no"),
    # refusal judged at step 2 → −1 to step 1 (express_urgency); stance s1 0.5 × (−1 − (−1)) = 0;
    # return −1.0
    (
        "B",
        "bob_5",
        "bob",
        [("REFUSE", 0.8, "express_urgency"), ("REFUSE", 0.9, "give_direction")],
        "no",
    ),
    # no event → unknown; stance s1 0, s2 0 (s3 has no next stance); return 0.0; no post-survey
    # answer
    (
        "B",
        "niki_6",
        "niki",
        [
            ("NEUTRAL", 0.6, "provide_information"),
            ("UNKNOWN", 0.5, "express_urgency"),
            ("NEUTRAL", 0.6, "give_direction"),
        ],
        None,
    ),
    # agreement at step 2 → +1 to step 1 (offer_assistance); stance s1 0.5 × (1 − 0) = 0.5; return
    # 1.5
    (
        "D",
        "mary_7",
        "mary",
        [("DELAY", 0.7, "offer_assistance"), ("AGREE", 0.8, "ask_question")],
        "yes",
    ),
    ("D", "nonrole_social-normative_8", "social-normative", [], "yes"),
    ("C", "nonrole_social-normative_9", "social-normative", [], None),
]
# Session niki_6 step 3 chose give_direction although provide_information had the higher Q-value.
NOT_ARGMAX = ("niki_6", 3)
SURVEYS = {
    "A": (
        {"age": "34", "gender": "female", "education": "graduate-degree", "ideology": "2"},
        {"q9": "5", "q10": "1"},
        [5, 5, 4, 4, 3, 3, 2, 2, 6, 6, 1, 1],
    ),
    "B": (
        {"age": "61", "gender": "male", "education": "high-school", "ideology": "6"},
        {"q9": "2", "q10": "4"},
        [2, 2, 3, 3, 4, 4, 5, 5, 1, 1, 6, 6],
    ),
    "D": (
        {"age": "45", "gender": "non-binary", "education": "some-college", "ideology": "4"},
        {"q9": "3", "q10": "3"},
        [4] * 12,
    ),
}
FILES = {"A": "completed/CCC001.json", "B": "exits/INC001.json", "D": "completed/CCC002.json"}


def q_values(session: str, step: int, policy: str) -> dict[str, float]:
    if (session, step) == NOT_ARGMAX:
        return {
            p: 0.4 if p == policy else 0.7 if p == "provide_information" else 0.5 for p in POLICIES
        }
    return {p: 0.9 if p == policy else 0.5 for p in POLICIES}


def session_record(who: str, name: str, label: str, steps: list) -> dict:
    roleplay = not name.startswith("nonrole")
    history, iql = [{"role": "operator", "text": "Hello, this is the fire department."}], []
    for k, (stance, confidence, policy) in enumerate(steps, start=1):
        resident, answer = f"{RESIDENT[stance]} ({'I' * k})", f"Dispatcher reply {'I' * k}."
        history += [{"role": "resident", "text": resident}, {"role": "operator", "text": answer}]
        iql.append(
            {
                "turn": k,
                "resident_message": resident,
                "operator_response": answer,
                "selected_policy": policy,
                "q_values": q_values(name, k, policy),
                "judge": {"stance": stance, "confidence": confidence, "reasoning": "by hand"},
            }
        )
    if not roleplay:
        history += [
            {"role": "resident", "text": "okay"},
            {"role": "operator", "text": "Please leave now."},
        ]
    return {
        "session_id": f"{PIDS[who]}_{name}",
        "participant_id": PIDS[who],
        "character": label if roleplay else None,
        "conversation_type": "roleplay" if roleplay else "non-roleplay",
        "persuasion_strategy": None if roleplay else label,
        "history": history,
        "iql_data": iql,
        "created_at": "2026-01-09T07:19:00",
        "ended_at": "2026-01-09T07:21:00",
    }


@pytest.fixture(scope="module")
def layout(tmp_path_factory) -> Layout:
    root = tmp_path_factory.mktemp("study_queries")
    raw = root / "raw" / "survey_responses"
    for who, name, label, steps, _ in SESSIONS:
        record = session_record(who, name, label, steps)
        write_json(raw / "conversations" / f"{record['session_id']}.json", record)
    for who, file in FILES.items():
        background, personality, moral = SURVEYS[who]
        posts = [
            {
                "sessionId": f"{PIDS[who]}_{name}",
                "participantId": PIDS[who],
                "willing": willing,
                "timestamp": "2026-01-09T07:30:00.000Z",
                "naturalness": "very-natural",
            }
            for p, name, _, _, willing in SESSIONS
            if p == who and willing is not None
        ]
        survey = {
            "background": {"email": "someone@example.org", "nickname": "Kit", **background},
            "personality": personality,
            "moral": {f"q{i}": str(v) for i, v in enumerate(moral, start=1)},
        }
        write_json(
            raw / file,
            {
                "participant_id": PIDS[who],
                "confirmation_number": Path(file).stem,
                "survey": survey,
                "post_surveys": posts,
                "conversations": [],
            },
        )
    built = run_pipeline(root / "raw", root / "data", release=False)
    assert built.silver["quarantine"].height == 0
    layout = Layout(root / "data")
    write_views(layout)
    return layout


def rows(layout: Layout, name: str) -> list[tuple]:
    frame = query(layout, saved_queries()[name].sql)
    return frame.with_columns(pl.col(pl.Decimal).cast(pl.Float64)).rows()


def test_persuasion_strategies_compares_non_roleplay_strategies_by_the_willing_answer(layout):
    # strategy, sessions, answered, yes, no, willing rate — sessions 1+4, 2, 8+9 (9 has no answer)
    assert rows(layout, "persuasion_strategies") == [
        ("social-normative", 2, 1, 1, 0, 1.0),
        ("rational-informational", 2, 2, 1, 1, 0.5),
        ("emotional-relational", 1, 1, 0, 1, 0.0),
    ]


def test_agreement_by_character_counts_only_roleplay_sessions(layout):
    # character, sessions, agreement, refusal, max_turns, mean return, post-surveys, willing rate
    assert rows(layout, "agreement_by_character") == [
        ("niki", 2, 0.5, 0.0, 0.0, 0.75, 1, 1.0),  # niki_3 agreement (1.5), niki_6 unknown (0.0)
        ("bob", 1, 0.0, 1.0, 0.0, -1.0, 1, 0.0),
        ("mary", 1, 1.0, 0.0, 0.0, 1.5, 1, 1.0),
    ]


def test_agreement_by_policy_credits_the_policy_of_the_step_before_the_ending_per_character(layout):
    # Steps before each ending: niki_3 s1; bob_5 s1; niki_6 s1-s3 (no ending); mary_7 s1.
    # character, policy, sessions, steps, rewarded, mean step reward, share → agree, share → refuse,
    # agreements credited, refusals credited, mean Q selected, mean Q margin
    assert rows(layout, "agreement_by_policy") == [
        ("bob", "express_urgency", 1, 1, 1, 0.0, 0.0, 0.0, 0, 1, 0.9, 0.4),
        ("mary", "offer_assistance", 1, 1, 1, 0.5, 1.0, 0.0, 1, 0, 0.9, 0.4),
        ("niki", "provide_information", 2, 2, 2, 0.25, 0.5, 0.0, 1, 0, 0.9, 0.4),
        ("niki", "express_urgency", 1, 1, 1, 0.0, 0.0, 0.0, 0, 0, 0.9, 0.4),
        ("niki", "give_direction", 1, 1, 0, None, None, None, 0, 0, 0.4, -0.3),
    ]


def test_q_values_over_turns_keeps_every_sessions_last_step(layout):
    expected = {}
    for _, name, _, steps, _ in SESSIONS:
        for k, (_, _, policy) in enumerate(steps, start=1):
            q = q_values(name, k, policy)
            alternative = max(v for p, v in q.items() if p != policy)
            expected.setdefault(k, []).append((q[policy], alternative))
    want = [
        (
            k,
            len(v),
            round(statistics.mean(s for s, _ in v), 4),
            round(statistics.mean(a for _, a in v), 4),
            round(statistics.mean(s - a for s, a in v), 4),
            round(statistics.mean(1.0 if s < a else 0.0 for s, a in v), 3),
        )
        for k, v in sorted(expected.items())
    ]
    assert [r[:2] for r in want] == [(1, 4), (2, 4), (3, 1)]  # every session's last step is a row
    got = rows(layout, "q_values_over_turns")
    assert [r[:2] for r in got] == [r[:2] for r in want]
    for g, w in zip(got, want, strict=True):
        assert g[2:] == pytest.approx(w[2:])


def test_outcomes_by_demographics_joins_pre_survey_background_to_session_outcomes(layout):
    # A: 3 sessions, 1 role-play (agreement), willing yes/no/yes; B: 3 sessions, 2 role-play
    # (refusal, unknown), willing no/no; D: 2 sessions, 1 role-play (agreement), willing yes/yes. C
    # has no survey.
    a = (1, 3, 1, 1.0, 0.0, 3, 0.667)
    b = (1, 3, 2, 0.0, 0.5, 2, 0.0)
    d = (1, 2, 1, 1.0, 0.0, 2, 1.0)
    assert rows(layout, "outcomes_by_demographics") == [
        ("age", "25-34", *a),
        ("age", "45-54", *d),
        ("age", "55-64", *b),
        ("education", "graduate-degree", *a),
        ("education", "high-school", *b),
        ("education", "some-college", *d),
        ("gender", "female", *a),
        ("gender", "male", *b),
        ("gender", "non-binary", *d),
        ("ideology", "2", *a),
        ("ideology", "4", *d),
        ("ideology", "6", *b),
    ]


def test_policy_effect_by_openness_bands_participants_by_the_openness_items(layout):
    # openness (q9 + 6 − q10) / 2: A (5 + 6 − 1) / 2 = 5 high; B (2 + 6 − 4) / 2 = 2 low; D (3 + 6 −
    # 3) / 2 = 3 medium band, policy, participants, steps, rewarded, mean step reward, agreements
    # credited, refusals credited
    assert rows(layout, "policy_effect_by_openness") == [
        ("a: low (< 3)", "express_urgency", 1, 2, 2, 0.0, 0, 1),  # bob_5 s1, niki_6 s2
        ("a: low (< 3)", "provide_information", 1, 1, 1, 0.0, 0, 0),
        ("a: low (< 3)", "give_direction", 1, 1, 0, None, 0, 0),
        ("b: medium (3 - 3.5)", "offer_assistance", 1, 1, 1, 0.5, 1, 0),
        ("c: high (>= 4)", "provide_information", 1, 1, 1, 0.5, 1, 0),
    ]


def test_moral_foundations_vs_resistance_correlates_foundations_with_refusal_and_unwillingness(
    layout,
):
    # Per participant, from the hand-stated outcomes: refusal rate over role-play sessions, and the
    # share of post-survey answers that were "no".
    refusal = {"A": 0 / 1, "B": 1 / 2, "D": 0 / 1}
    not_willing = {"A": 1 / 3, "B": 2 / 2, "D": 0 / 2}
    foundations = ("care", "fairness", "loyalty", "authority", "sanctity", "liberty")
    want = []
    for i, foundation in enumerate(foundations):
        score = {w: statistics.mean(SURVEYS[w][2][2 * i : 2 * i + 2]) for w in SURVEYS}
        people = sorted(score)
        xs = [score[w] for w in people]
        want.append(
            (
                foundation,
                3,
                round(statistics.mean(xs), 3),
                3,
                round(statistics.correlation(xs, [refusal[w] for w in people]), 3),
                3,
                round(statistics.correlation(xs, [not_willing[w] for w in people]), 3),
            )
        )
    got = rows(layout, "moral_foundations_vs_resistance")
    assert [r[0] for r in got] == sorted(foundations)
    by_name = {r[0]: r for r in got}
    for w in want:
        assert by_name[w[0]][1:] == pytest.approx(w[1:])
