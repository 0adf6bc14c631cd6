"""The decision demo's rule cases: one decision per rule case of issue 13, each built on a
template decision, in a session of their own that the export carries (demo/decision.py)."""

from __future__ import annotations

from typing import Any

import orjson

from pipelines.demo.decision_personas import PERSONAS


def _case(
    base: dict,
    decision_id: str,
    minutes: int,
    actor: tuple[str, str, str],
    decision: dict,
    outcome: dict | None,
    **top: Any,
) -> dict:
    """One rule case, built on a template decision (its context) with its own id, time, actor and
    outcome."""
    record = orjson.loads(orjson.dumps(base))
    actor_id, actor_type, name = actor
    ts_ms = record["timestamp"] + minutes * 60_000
    record.update(
        id=decision_id,
        timestamp=ts_ms,
        actorId=actor_id,
        actorType=actor_type,
        actorName=name,
        decision={"confidence": 0.7, "responseTime": 1200, **decision},
        **top,
    )
    record["outcome"] = (
        None
        if outcome is None
        else {"ratedAt": ts_ms + 600_000, "reasoning": "Rule case.", **outcome}
    )
    record["metadata"] = {
        **record["metadata"],
        "sessionId": "rule-cases",
        "sequenceNumber": minutes,
    }
    prompt = (
        f"You are {name}, a human member of the room."
        if actor_type == "human"
        else PERSONAS.get(
            name, f"You are {name}, a visiting assistant. Speak only when asked directly."
        )
    )
    record["ragContext"] = {
        **record["ragContext"],
        "identity": {"systemPrompt": prompt, "role": actor_type},
    }
    return record


def rule_cases(base: dict) -> list[dict]:
    """One decision per rule case of issue 13, in a session of their own (written to the export)."""
    ana, helper = ("user-ana", "human", "Ana"), ("persona-helper-ai", "ai-persona", "Helper AI")
    guest = (
        "persona-guest-bot",
        "ai-persona",
        "Guest Bot",
    )  # rates itself once: no evidence about its scale
    silent, posted = (
        {"action": "SILENT"},
        {"action": "POSTED", "responseContent": "On it, checking the logs now."},
    )
    suggest = {
        "suggestedAction": "POSTED",
        "confidence": 0.8,
        "reasoning": "You were mentioned by name.",
    }
    return [
        # a 1 from a star rater, "not a good decision": the bottom of 1–5 → −1 (issue 13 item 1)
        _case(
            base,
            "case-worst-of-5",
            1,
            ana,
            silent,
            {"rating": 1, "wasGoodDecision": False, "ratedBy": "user"},
        ),
        # a 1 from a 0–1 self-rater (its other self-rating is 0.7): the top of 0–1 → +1
        _case(
            base,
            "case-self-0.7",
            2,
            helper,
            posted,
            {"rating": 0.7, "wasGoodDecision": True, "ratedBy": "self"},
        ),
        _case(
            base,
            "case-best-of-0-1",
            3,
            helper,
            posted,
            {"rating": 1, "wasGoodDecision": True, "ratedBy": "self"},
        ),
        # a 1 with no evidence either way and `true`: the scale stays unknown → no reward
        _case(
            base,
            "case-ambiguous-1",
            4,
            guest,
            silent,
            {"rating": 1, "wasGoodDecision": True, "ratedBy": "self"},
        ),
        # followed: the source's wasFollowed, and actions that differ only in case
        _case(
            base,
            "case-followed-cased",
            5,
            ana,
            {
                **posted,
                "companionSuggestion": {
                    **suggest,
                    "suggestedAction": "posted",
                    "wasFollowed": True,
                },
            },
            {"rating": 4, "wasGoodDecision": True, "ratedBy": "user"},
        ),
        _case(
            base,
            "case-followed-no-flag",
            6,
            ana,
            {**silent, "companionSuggestion": {**suggest, "suggestedAction": "silent"}},
            None,
        ),
        # an override whose outcome rates the human's choice bad → no preference pair
        _case(
            base,
            "case-override-rated-bad",
            7,
            ana,
            {**silent, "companionSuggestion": {**suggest, "wasFollowed": False}},
            {"rating": 2, "wasGoodDecision": False, "ratedBy": "user"},
        ),
        # seed 004's optional fields, top level as the export writes them
        _case(
            base,
            "case-extra-fields",
            8,
            helper,
            {
                **posted,
                "alternatives": [
                    {
                        "action": "SILENT",
                        "confidence": 0.3,
                        "reasoning": "Teacher AI may answer.",
                        "whyNotChosen": "I was named.",
                    }
                ],
            },
            {
                "rating": 0.9,
                "wasGoodDecision": True,
                "ratedBy": "system",
                "followUp": {
                    "conversationContinued": True,
                    "userSatisfaction": 0.8,
                    "mistakeCorrected": False,
                },
            },
            consensus={
                "participants": ["persona-helper-ai", "persona-teacher-ai"],
                "votes": {"persona-helper-ai": "POSTED", "persona-teacher-ai": "SILENT"},
                "finalDecision": "majority",
            },
            longTermOutcome={
                "checkpoints": [
                    {
                        "timestamp": base["timestamp"] + 86_400_000,
                        "metric": "threadResolved",
                        "value": 1,
                    }
                ],
                "finalOutcome": "good",
            },
        ),
    ]
