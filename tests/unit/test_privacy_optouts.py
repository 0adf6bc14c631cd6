"""Opt-out registry and withholding: each subject kind withholds exactly its rows; subject
lookup."""

from __future__ import annotations

import polars as pl
import pytest

from pipelines.privacy.optouts import load_optouts, parse_optouts, withhold
from pipelines.privacy.subjects import subject_rows

P1, P2 = "11111111-aaaa-4bbb-8ccc-000000000001", "22222222-aaaa-4bbb-8ccc-000000000002"
S = pl.String


def _silver() -> dict[str, pl.DataFrame]:
    episodes = pl.DataFrame(
        [
            ("study:" + P1 + "_ana_1", "study", P1 + "_ana_1", P1, 2),
            ("study:" + P2 + "_bob_1", "study", P2 + "_bob_1", P2, 2),
            ("dialogue:support/sup-1", "dialogue", "support/sup-1", "dialogue:support/sup-1", 2),
            ("dialogue:tutoring/sup-1", "dialogue", "tutoring/sup-1", "dialogue:tutoring/sup-1", 2),
            ("dialogue:support/sup-2", "dialogue", "support/sup-2", "dialogue:support/sup-2", 2),
            ("scenario:SCN-1", "scenario", "SCN-1", "SCN-1", 2),
            ("scenario:SCN-2", "scenario", "SCN-2", "SCN-2", 2),
            ("decision:D1", "decision", "D1", "decision:D1", 2),
            ("decision:D2", "decision", "D2", "decision:D2", 2),
            ("social_rl:run/round1", "social_rl", "run/round1", "experiment:x", 2),
        ],
        schema={"episode_id": S, "source": S, "native_id": S, "group_id": S, "n_turns": pl.Int64},
        orient="row",
    )
    speakers = {
        "study:" + P1 + "_ana_1": [("assistant", "operator"), ("user", P1)],
        "study:" + P2 + "_bob_1": [("assistant", "operator"), ("user", P2)],
        "decision:D1": [("user", "user-marcus"), ("assistant", "persona-ai")],
        "decision:D2": [("user", "user-marcus"), ("user", "user-ana")],
        "social_rl:run/round1": [("agent", "Worker+Alice"), ("agent", "Worker+Ben")],
    }
    turn_rows = []
    for ep in episodes["episode_id"]:
        for i, (role, actor) in enumerate(speakers.get(ep, [("user", None), ("assistant", None)])):
            turn_rows.append((f"{ep}#{i}", ep, i, role, actor, f"text {i}"))
    turns = pl.DataFrame(
        turn_rows,
        schema={
            "turn_id": S,
            "episode_id": S,
            "turn_index": pl.Int64,
            "role": S,
            "actor_id": S,
            "text": S,
        },
        orient="row",
    )
    decisions = pl.DataFrame(
        [
            (
                "d-s1",
                "study:" + P1 + "_ana_1",
                "study:" + P1 + "_ana_1#0",
                "operator",
                "policy",
                None,
            ),
            (
                "d-s2",
                "study:" + P2 + "_bob_1",
                "study:" + P2 + "_bob_1#0",
                "operator",
                "policy",
                None,
            ),
            ("d-m1", "decision:D1", "decision:D1#0", "user-marcus", "human", "c1"),
            ("d-p1", "decision:D1", "decision:D1#1", "persona-ai", "ai", "c2"),
            ("d-m2", "decision:D2", "decision:D2#0", "user-marcus", "human", "c4"),
            ("d-a2", "decision:D2", "decision:D2#1", "user-ana", "human", "c1"),
            ("d-scn1", "scenario:SCN-1", None, None, "human", "c5"),
        ],
        schema={
            "decision_id": S,
            "episode_id": S,
            "turn_id": S,
            "actor_id": S,
            "actor_type": S,
            "context_hash": S,
        },
        orient="row",
    )
    feedback = pl.DataFrame(
        [
            ("f-s1", "study:" + P1 + "_ana_1", None, None, None, "episode", None),
            (
                "f-s1t",
                "study:" + P1 + "_ana_1",
                "study:" + P1 + "_ana_1#1",
                None,
                None,
                "turn",
                None,
            ),
            ("f-s2", "study:" + P2 + "_bob_1", None, "d-s2", None, "decision", None),
            (
                "f-sup1",
                "dialogue:support/sup-1",
                "dialogue:support/sup-1#1",
                None,
                None,
                "turn",
                None,
            ),
            (
                "f-sup2",
                "dialogue:support/sup-2",
                "dialogue:support/sup-2#1",
                None,
                None,
                "turn",
                '{"extra":{"user_id":"u-71"}}',
            ),
            (
                "f-sup2b",
                "dialogue:support/sup-2",
                "dialogue:support/sup-2#1",
                None,
                None,
                "turn",
                '{"extra":{"user_id":"u-72"}}',
            ),
            ("f-scn1", "scenario:SCN-1", None, "d-scn1", None, "decision", None),
            ("f-m1", "decision:D1", None, "d-m1", None, "decision", None),
            ("f-a2", "decision:D2", None, "d-a2", None, "decision", None),
            ("f-alice", "social_rl:run/round1", None, None, "Worker+Alice", "agent_round", None),
            ("f-ben", "social_rl:run/round1", None, None, "Worker+Ben", "agent_round", None),
        ],
        schema={
            "feedback_id": S,
            "episode_id": S,
            "turn_id": S,
            "decision_id": S,
            "agent_id": S,
            "target": S,
            "attributes": S,
        },
        orient="row",
    )
    agent_rounds = pl.DataFrame(
        {
            "episode_id": ["social_rl:run/round1"] * 2,
            "agent_id": ["Worker+Alice", "Worker+Ben"],
            "round_number": [1, 1],
        }
    )
    contexts = pl.DataFrame({"context_hash": ["c1", "c2", "c4", "c5", "c9"], "context": ["{}"] * 5})
    quarantine = pl.DataFrame(
        {
            "source": ["study", "dialogue"],
            "file": [
                f"survey_responses/conversations/{P1}_ana_9.json",
                "dialogues/support/a.jsonl",
            ],
            "locator": ["line 1", "line 4"],
            "raw": ["{broken", "{broken"],
        }
    )
    return {
        "episodes": episodes,
        "turns": turns,
        "decisions": decisions,
        "feedback": feedback,
        "agent_rounds": agent_rounds,
        "contexts": contexts,
        "quarantine": quarantine,
    }


def _opt(*pairs: tuple[str, str]) -> pl.DataFrame:
    return pl.DataFrame(
        {"subject_kind": [k for k, _ in pairs], "subject_id": [i for _, i in pairs]}
    )


def _removed(
    before: dict[str, pl.DataFrame], after: dict[str, pl.DataFrame], key: dict[str, str]
) -> dict[str, set]:
    out = {}
    for name, k in key.items():
        out[name] = set(before[name][k].to_list()) - set(after[name][k].to_list())
    return out


KEYS = {
    "episodes": "episode_id",
    "turns": "turn_id",
    "decisions": "decision_id",
    "feedback": "feedback_id",
    "contexts": "context_hash",
    "agent_rounds": "agent_id",
    "quarantine": "file",
}


def test_participant_withholds_their_sessions_and_everything_hanging_off_them() -> None:
    silver = _silver()
    out, counts = withhold(silver, _opt(("participant", P1)))
    gone = _removed(silver, out, KEYS)
    ep = "study:" + P1 + "_ana_1"
    assert gone["episodes"] == {ep}
    assert gone["turns"] == {ep + "#0", ep + "#1"}
    assert gone["decisions"] == {"d-s1"} and gone["feedback"] == {"f-s1", "f-s1t"}
    assert gone["quarantine"] == {f"survey_responses/conversations/{P1}_ana_9.json"}
    assert not gone["contexts"] and not gone["agent_rounds"]
    assert counts == {
        "episodes": 1,
        "turns": 2,
        "decisions": 1,
        "feedback": 2,
        "agent_rounds": 0,
        "contexts": 0,
        "quarantine": 1,
    }
    assert all(isinstance(v, int) for v in counts.values())


def test_conversation_by_native_id_or_bare_id() -> None:
    silver = _silver()
    gone = _removed(silver, withhold(silver, _opt(("conversation", "support/sup-1")))[0], KEYS)
    assert gone["episodes"] == {"dialogue:support/sup-1"} and gone["feedback"] == {"f-sup1"}
    assert len(gone["turns"]) == 2
    gone = _removed(silver, withhold(silver, _opt(("conversation", "sup-1")))[0], KEYS)
    assert gone["episodes"] == {"dialogue:support/sup-1", "dialogue:tutoring/sup-1"}
    assert len(gone["turns"]) == 4 and gone["feedback"] == {"f-sup1"}


def test_scenario_withholds_episode_decisions_feedback_and_only_its_contexts() -> None:
    silver = _silver()
    gone = _removed(silver, withhold(silver, _opt(("scenario", "SCN-1")))[0], KEYS)
    assert gone["episodes"] == {"scenario:SCN-1"} and gone["decisions"] == {"d-scn1"}
    assert gone["feedback"] == {"f-scn1"} and gone["contexts"] == {"c5"} and len(gone["turns"]) == 2


def test_actor_withholds_their_rows_and_episodes_where_they_are_the_only_human() -> None:
    silver = _silver()
    out, _counts = withhold(silver, _opt(("actor", "user-marcus")))
    gone = _removed(silver, out, KEYS)
    # D1: marcus is the only human -> whole episode (persona turn too); D2: only marcus's own rows.
    assert gone["episodes"] == {"decision:D1"}
    assert gone["turns"] == {"decision:D1#0", "decision:D1#1", "decision:D2#0"}
    assert gone["decisions"] == {"d-m1", "d-p1", "d-m2"}
    assert gone["feedback"] == {"f-m1"}
    assert gone["contexts"] == {"c2", "c4"}  # c1 is still referenced by user-ana's decision
    d2 = out["episodes"].filter(pl.col("episode_id") == "decision:D2")
    assert d2["n_turns"].item() == 1  # recounted
    untouched = out["episodes"].filter(pl.col("episode_id") != "decision:D2")
    assert untouched["n_turns"].to_list() == [2] * untouched.height


def test_actor_as_rater_and_as_agent() -> None:
    silver = _silver()
    gone = _removed(silver, withhold(silver, _opt(("actor", "u-71")))[0], KEYS)
    assert gone["feedback"] == {"f-sup2"} and not gone["episodes"] and not gone["turns"]
    gone = _removed(silver, withhold(silver, _opt(("actor", "Worker+Alice")))[0], KEYS)
    assert gone["agent_rounds"] == {"Worker+Alice"} and gone["feedback"] == {"f-alice"}
    assert gone["turns"] == {"social_rl:run/round1#0"} and not gone["episodes"]


def test_no_optouts_changes_nothing_and_unknown_subject_withholds_nothing() -> None:
    silver = _silver()
    out, counts = withhold(silver, parse_optouts(b"")[0])
    assert all(out[n].equals(silver[n]) for n in silver) and set(counts.values()) == {0}
    out, counts = withhold(silver, _opt(("participant", "nobody"), ("scenario", "SCN-404")))
    assert set(counts.values()) == {0}


def test_load_optouts_reports_bad_lines_and_never_crashes(tmp_path) -> None:
    consent = tmp_path / "consent"
    consent.mkdir()
    lines = [
        (
            '\ufeff{"subject_kind": "participant", "subject_id": "P-1", "opted_out_at": '
            '"2025-12-01T10:00:00Z"}'
        ),
        (
            '{"subject_kind": "participant", "subject_id": "P-1", "opted_out_at": '
            '"2025-11-01T10:00:00+01:00"}'
        ),
        "",
        '{"subject_kind": "actor", "subject_id": 42, "opted_out_at": "2025-12-02T00:00:00"}',
        "{not json",
        "[1, 2]",
        '{"subject_kind": "robot", "subject_id": "r1", "opted_out_at": "2025-12-01T00:00:00Z"}',
        '{"subject_kind": "scenario", "opted_out_at": "2025-12-01T00:00:00Z"}',
        (
            '{"subject_kind": "conversation", "subject_id": "  ", "opted_out_at": '
            '"2025-12-01T00:00:00Z"}'
        ),
        '{"subject_kind": "Conversation", "subject_id": "sup-1", "opted_out_at": "yesterday"}',
        # truncated last line
        '{"subject_kind": "scenario", "subject_id": "SCN-1", "opted_out_at": "2025-12-0',
    ]
    (consent / "optouts.jsonl").write_text("\r\n".join(lines), encoding="utf-8")
    frame, problems = load_optouts(tmp_path)
    assert frame.select("subject_kind", "subject_id").rows() == [
        ("actor", "42"),
        ("conversation", "sup-1"),
        ("participant", "P-1"),
    ]
    assert (
        frame.filter(pl.col("subject_id") == "P-1")["opted_out_at"]
        .dt.to_string("%Y-%m-%dT%H:%M")
        .item()
        == "2025-11-01T09:00"
    )
    assert frame.schema["opted_out_at"] == pl.Datetime("us", "UTC")
    assert frame.filter(pl.col("subject_id") == "sup-1")["opted_out_at"].item() is None
    kinds = {(p.line, p.error_kind, p.honoured) for p in problems}
    assert kinds == {
        (5, "invalid_json", False),
        (6, "not_an_object", False),
        (7, "bad_value", False),
        (8, "missing_field", False),
        (9, "bad_value", False),
        (10, "bad_value", True),
        (11, "invalid_json", False),
    }
    assert not any("sup-1" in p.message or "r1" in p.message for p in problems)


def test_missing_registry_means_no_optouts(tmp_path) -> None:
    frame, problems = load_optouts(tmp_path)
    assert (
        frame.is_empty()
        and not problems
        and frame.columns == ["subject_kind", "subject_id", "opted_out_at", "line"]
    )


def test_subject_rows_spans_silver_and_gold() -> None:
    silver = _silver()
    ep = "study:" + P1 + "_ana_1"
    gold = {
        "gold.turn_rewards": pl.DataFrame(
            {
                "reward_id": ["r1", "r2", "r3"],
                "episode_id": [ep, "decision:D2", "decision:D2"],
                "target_id": [ep, "d-a2", "d-m2"],
                "feedback_ids": [["f-s1"], ["f-a2"], ["zzz"]],
            }
        ),
        "gold.splits": pl.DataFrame({"group_id": [P1, P2], "split": ["train", "test"]}),
        "gold.quality_signals": pl.DataFrame(
            {"turn_id": [ep + "#1", "decision:D2#1"], "episode_id": [ep, "decision:D2"]}
        ),
    }
    rows = subject_rows({**silver, **gold}, "participant", P1)
    assert rows["gold.turn_rewards"]["reward_id"].to_list() == ["r1"]
    assert rows["gold.splits"]["group_id"].to_list() == [P1]
    assert rows["gold.quality_signals"].height == 1 and rows["episodes"].height == 1
    rows = subject_rows({**silver, **gold}, "actor", "user-ana")
    assert rows["gold.turn_rewards"]["reward_id"].to_list() == ["r2"]
    assert rows["decisions"]["decision_id"].to_list() == ["d-a2"] and rows["episodes"].is_empty()
    with pytest.raises(ValueError, match="unknown subject kind"):
        subject_rows(silver, "robot", "x")
