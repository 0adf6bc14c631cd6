"""Saved query `human_override_rate` against a result worked out by hand on a small decision
fixture.

Seed 004's question: how often do humans override the companion's suggestion, and with what
outcome? Followed = the source's own `wasFollowed`, else the actions compared case-insensitively.
"""

from __future__ import annotations

from pipelines.storage.layout import Layout
from pipelines.warehouse.queries import saved_queries
from pipelines.warehouse.views import query, write_views
from tests.conformance.harness import run_pipeline, write_jsonl


def decision(
    decision_id: str,
    actor: str,
    action: str,
    suggestion: dict | None,
    outcome: dict | None,
    actor_type: str = "human",
    minute: int = 0,
) -> dict:
    body: dict = {"action": action, "confidence": 0.7}
    if suggestion is not None:
        body["companionSuggestion"] = suggestion
    return {
        "id": decision_id,
        "timestamp": f"2025-03-03T10:{minute:02d}:00Z",
        "actorId": actor,
        "actorType": actor_type,
        "actorName": actor,
        "ragContext": {"identity": {"systemPrompt": "You are a member of #general."}},
        "decision": body,
        "outcome": outcome,
        "metadata": {"sessionId": f"s-{actor}", "sequenceNumber": minute},
    }


def suggest(action: str, followed: bool | None = None) -> dict:
    out: dict = {"suggestedAction": action, "confidence": 0.6, "reasoning": "a hint"}
    if followed is not None:
        out["wasFollowed"] = followed
    return out


def outcome(rating: float | None = None, good: bool | None = None) -> dict:
    out: dict = {"ratedBy": "user", "ratedAt": 1741000000000, "reasoning": "looked at later"}
    if rating is not None:
        out["rating"] = rating
    if good is not None:
        out["wasGoodDecision"] = good
    return out


RECORDS = [
    # ana: overridden (wasFollowed false); 1–5 rating 5 → (5 − 1) / 4 = 1 → reward +1; judged good
    decision("d-1", "ana", "SILENT", suggest("POSTED", False), outcome(5, True), minute=1),
    # ana: followed — `posted` vs `POSTED`, no wasFollowed; no rating, wasGoodDecision false → −1;
    # judged bad
    decision("d-2", "ana", "POSTED", suggest("posted"), outcome(good=False), minute=2),
    # ana: overridden (actions differ, no wasFollowed); a 1 with `true` and no other evidence → no
    # reward; judged good
    decision("d-3", "ana", "SILENT", suggest("POSTED"), outcome(1, True), minute=3),
    # ana: followed by the source's word although the actions differ; unrated
    decision("d-4", "ana", "POSTED", suggest("SILENT", True), None, minute=4),
    # joel: overridden; 1–5 rating 2 → (2 − 1) / 4 = 0.25 → −0.5; judged bad
    decision("d-5", "joel", "POSTED", suggest("SILENT", False), outcome(2, False), minute=5),
    # joel: no suggestion → not counted
    decision("d-6", "joel", "SILENT", None, outcome(4, True), minute=6),
    # an AI persona with a suggestion → not a human, not counted
    decision(
        "d-7",
        "helper-ai",
        "SILENT",
        suggest("POSTED", False),
        outcome(5, True),
        actor_type="ai-persona",
        minute=7,
    ),
]

# Worked out by hand from RECORDS:
# ana:  4 decisions with a suggestion (d-1..d-4); overridden d-1, d-3 → 2, rate 2/4 = 0.5;
#       rewarded among overridden: d-1 (+1) → 1, mean 1.0; among followed: d-2 (−1) → 1, mean −1.0;
#       judged good among overridden: d-1 true, d-3 true → 1.0; among followed: d-2 false (d-4 none)
# → 0.0 joel: 1 decision with a suggestion (d-5), overridden → 1, rate 1.0; rewarded 1, mean −0.5;
# no followed decision → 0 rewarded, mean null; judged good when overridden 0.0, when followed null
EXPECTED = [
    {
        "actor": "ana",
        "decisions_with_suggestion": 4,
        "overridden": 2,
        "override_rate": 0.5,
        "overridden_rewarded": 1,
        "mean_reward_when_overridden": 1.0,
        "followed_rewarded": 1,
        "mean_reward_when_followed": -1.0,
        "judged_good_when_overridden": 1.0,
        "judged_good_when_followed": 0.0,
    },
    {
        "actor": "joel",
        "decisions_with_suggestion": 1,
        "overridden": 1,
        "override_rate": 1.0,
        "overridden_rewarded": 1,
        "mean_reward_when_overridden": -0.5,
        "followed_rewarded": 0,
        "mean_reward_when_followed": None,
        "judged_good_when_overridden": 0.0,
        "judged_good_when_followed": None,
    },
]


def test_human_override_rate_counts_overrides_and_their_outcomes_as_the_source_records_them(
    tmp_path,
):
    raw = tmp_path / "raw"
    write_jsonl(raw / "decisions" / "continuum" / "export.jsonl", RECORDS)
    built = run_pipeline(raw, tmp_path / "data", release=False)
    layout = Layout(built.settings.data_root)
    write_views(layout)
    result = query(layout, saved_queries()["human_override_rate"].sql)
    assert result.to_dicts() == EXPECTED


# Replays of RECORDS (d-1 SILENT, d-2 POSTED, d-5 POSTED, d-6 SILENT; all domain null):
# critic: d-1 SILENT (agrees), d-2 posted (agrees: case), d-5 SILENT (no) → 3 replayed, 2 agree
# calm: d-6 POSTED (no) → 1 replayed, 0 agree; a result for d-99 (unknown) is quarantined
REPLAYS = [
    {"decision_id": "d-1", "persona": "critic", "action": "SILENT"},
    {"decision_id": "d-2", "persona": "critic", "action": "posted"},
    {"decision_id": "d-5", "persona": "critic", "action": "SILENT"},
    {"decision_id": "d-6", "persona": "calm", "action": "POSTED"},
    {"decision_id": "d-99", "persona": "calm", "action": "POSTED"},
]
EXPECTED_AGREEMENT = [
    {"persona": "calm", "domain": None, "replayed": 1, "agreeing": 0, "agreement_rate": 0.0},
    {"persona": "critic", "domain": None, "replayed": 3, "agreeing": 2, "agreement_rate": 2 / 3},
]


def test_replay_agreement_and_a_later_rating_superseding_the_sources_own(tmp_path):
    raw = tmp_path / "raw"
    write_jsonl(raw / "decisions" / "continuum" / "export.jsonl", RECORDS)
    write_jsonl(raw / "replays" / "results.jsonl", REPLAYS)
    # d-5 was rated 2 of 5 by its user at 1741000000000 ms; the user rates it 5 of 5 later
    later = {"event_id": "e1", "decision_id": "d-5", "rating": 5, "scale": "1-5"}
    later |= {"rated_by": "user", "rated_at": "2025-03-10T00:00:00Z"}
    write_jsonl(raw / "ratings" / "ratings.jsonl", [later])
    built = run_pipeline(raw, tmp_path / "data", release=False)
    layout = Layout(built.settings.data_root)
    write_views(layout)
    assert query(layout, saved_queries()["replay_agreement"].sql).to_dicts() == EXPECTED_AGREEMENT
    names = query(
        layout,
        "SELECT name, value_num FROM feedback WHERE decision_id = 'd-5' "
        "AND name LIKE '%rating%' OR (decision_id = 'd-5' AND name LIKE 'was_good%') ORDER BY 1, 2",
    ).rows()
    assert names == [
        ("rating", 5.0),
        ("rating_superseded", 2.0),
        ("was_good_decision_superseded", 0.0),
    ]
    # the current rating 5 → (5 − 1) / 4 = 1 → reward 2·1 − 1 = +1 (was −0.5)
    reward = query(layout, "SELECT reward FROM turn_rewards WHERE decision_id = 'd-5'")
    assert reward["reward"].to_list() == [1.0]
    orphans = query(layout, "SELECT count(*) AS n FROM quarantine WHERE error_kind = 'orphan'")
    assert orphans["n"].to_list() == [1]
