"""One CoordinationDecision record (SQLite row or exported JSONL entity) → one bronze row.

SQLite columns are snake_case and hold JSON as text; the JSONL export is camelCase with nested
objects. Both are read through the same alias table so a decision looks the same either way.
"""

from __future__ import annotations

from typing import Any

from pipelines.config.settings import Limits, Settings
from pipelines.sources.base import RawFile, RecordError
from pipelines.sources.decision.blobs import decode_json_part, decode_rag_context, json_text_or_none
from pipelines.sources.values import as_float, as_int, expect_type, first_of, parse_ts, require

SOURCE = "decision"
TABLE = "decision_records"

# canonical name → spellings (SQLite snake_case first, JSONL camelCase second)
TOP_LEVEL: dict[str, tuple[str, ...]] = {
    "id": ("id",),
    "timestamp": ("timestamp",),
    "actor_id": ("actor_id", "actorId"),
    "actor_type": ("actor_type", "actorType"),
    "actor_name": ("actor_name", "actorName"),
    "trigger_event_id": ("trigger_event_id", "triggerEventId"),
    "domain": ("domain",),
    "session_id": ("session_id", "sessionId"),
    "rag_context": ("rag_context", "ragContext"),
    "visual_context": ("visual_context", "visualContext"),
    "coordination_snapshot": ("coordination_snapshot", "coordinationSnapshot"),
    "ambient_state": ("ambient_state", "ambientState"),
    "decision": ("decision",),
    "outcome": ("outcome",),
    "metadata": ("metadata",),
    # Seed 004's "future extensions": top-level fields / SQLite JSON text columns where a writer
    # puts them.
    "alternatives": ("alternatives",),
    "consensus": ("consensus",),
    "follow_up": ("follow_up", "followUp"),
    "long_term_outcome": ("long_term_outcome", "longTermOutcome"),
}
_KNOWN_TOP = frozenset(name for names in TOP_LEVEL.values() for name in names)
_DECISION_KEYS = {
    "action": ("action",),
    "confidence": ("confidence",),
    "reasoning": ("reasoning",),
    "response_content": ("responseContent", "response_content"),
    "model_used": ("modelUsed", "model_used"),
    "companion_suggestion": ("companionSuggestion", "companion_suggestion"),
    "alternatives": ("alternatives",),
    "consensus": ("consensus",),
}
_KNOWN_DECISION = frozenset(name for names in _DECISION_KEYS.values() for name in names)


def field(record: dict, canonical: str) -> Any:
    return first_of(record, *TOP_LEVEL[canonical])


def _optional_text(value: Any, what: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return expect_type(value, str, what)


def _confidence(decision: dict) -> float | None:
    value = as_float(first_of(decision, "confidence"), "decision.confidence")
    if value is not None and not 0.0 <= value <= 1.0:
        raise RecordError("bad_value", f"decision.confidence {value} is outside [0,1]")
    return value


def _decision_fields(decision: dict) -> dict[str, Any]:
    action = _optional_text(require(decision, "action"), "decision.action")
    suggestion = first_of(decision, *_DECISION_KEYS["companion_suggestion"])
    if suggestion is not None:
        expect_type(suggestion, dict, "decision.companionSuggestion")
    details = {k: v for k, v in decision.items() if k not in _KNOWN_DECISION}
    was_followed = (
        None if suggestion is None else first_of(suggestion, "wasFollowed", "was_followed")
    )
    if was_followed is not None:
        expect_type(was_followed, bool, "companionSuggestion.wasFollowed")
    return {
        "action": action,
        "confidence": _confidence(decision),
        "reasoning": _optional_text(first_of(decision, "reasoning"), "decision.reasoning"),
        "response_content": _optional_text(
            first_of(decision, *_DECISION_KEYS["response_content"]), "decision.responseContent"
        ),
        "model_used": _optional_text(
            first_of(decision, *_DECISION_KEYS["model_used"]), "decision.modelUsed"
        ),
        "decision_details": json_text_or_none(details or None),
        "suggested_action": None
        if suggestion is None
        else _optional_text(
            first_of(suggestion, "suggestedAction", "suggested_action"),
            "companionSuggestion.suggestedAction",
        ),
        "companion_suggestion": json_text_or_none(suggestion),
        "was_followed": was_followed,
    }


def _outcome_fields(outcome: dict | None, tz: str) -> dict[str, Any]:
    if outcome is None:
        return {"outcome": None}
    rating = as_float(first_of(outcome, "rating"), "outcome.rating")
    if rating is not None and not 0.0 <= rating <= 5.0:
        raise RecordError(
            "bad_value", f"outcome.rating {rating} fits neither the 0–1 nor the 1–5 scale"
        )
    was_good = first_of(outcome, "wasGoodDecision", "was_good_decision")
    if was_good is not None:
        expect_type(was_good, bool, "outcome.wasGoodDecision")
    return {
        "outcome": json_text_or_none(outcome),
        "outcome_rating": rating,
        "outcome_was_good": was_good,
        "outcome_rated_by": _optional_text(
            first_of(outcome, "ratedBy", "rated_by"), "outcome.ratedBy"
        ),
        "outcome_rated_at": parse_ts(first_of(outcome, "ratedAt", "rated_at"), tz),
    }


def _system_prompt(rag: Any) -> str | None:
    if not isinstance(rag, dict):
        return None
    identity = rag.get("identity")
    nested = identity.get("systemPrompt") if isinstance(identity, dict) else None
    prompt = first_of(rag, "systemPrompt", "system_prompt", default=nested)
    return _optional_text(prompt, "ragContext.identity.systemPrompt")


def _one_of_two_places(
    record: dict,
    nested: dict | None,
    canonical: str,
    nested_names: tuple[str, ...],
    limits: Limits,
    types: tuple[type, ...],
) -> Any:
    """A seed-004 extension field: top-level (JSONL) / its own JSON text column (SQLite), else
    nested."""
    value = decode_json_part(field(record, canonical), limits, canonical, types)
    if value is None and isinstance(nested, dict):
        value = decode_json_part(first_of(nested, *nested_names), limits, canonical, types)
    return value


def _alternatives(value: list | None) -> list | None:
    """`alternatives`: options considered and not chosen, each an object with an action."""
    for i, item in enumerate(value or []):
        what = f"alternatives[{i}]"
        expect_type(item, dict, what)
        _optional_text(require(item, "action"), f"{what}.action")
        for key in ("value", "confidence"):
            as_float(item.get(key), f"{what}.{key}")
    return value


def _follow_up_fields(follow_up: dict | None) -> dict[str, Any]:
    """`outcome.followUp` (seed 004): did the conversation continue, user satisfaction, mistake
    corrected."""
    follow_up = follow_up or {}
    flags = {}
    for column, names in (
        ("follow_up_conversation_continued", ("conversationContinued", "conversation_continued")),
        ("follow_up_mistake_corrected", ("mistakeCorrected", "mistake_corrected")),
    ):
        value = first_of(follow_up, *names)
        flags[column] = None if value is None else expect_type(value, bool, f"followUp.{names[0]}")
    satisfaction = as_float(
        first_of(follow_up, "userSatisfaction", "user_satisfaction"), "followUp.userSatisfaction"
    )
    return {
        "follow_up": json_text_or_none(follow_up or None),
        **flags,
        "follow_up_user_satisfaction": satisfaction,
    }


def _long_term_fields(long_term: dict | None) -> dict[str, Any]:
    """`longTermOutcome` (seed 004): checkpoints over time and a final category (excellent …
    disaster)."""
    if long_term is None:
        return {"long_term_outcome": None, "long_term_outcome_final": None}
    checkpoints = first_of(long_term, "checkpoints")
    if checkpoints is not None:
        expect_type(checkpoints, list, "longTermOutcome.checkpoints")
    final = _optional_text(
        first_of(long_term, "finalOutcome", "final_outcome"), "longTermOutcome.finalOutcome"
    )
    return {"long_term_outcome": json_text_or_none(long_term), "long_term_outcome_final": final}


def _extension_fields(
    record: dict, decision: dict, outcome: dict | None, limits: Limits
) -> dict[str, Any]:
    alternatives = _one_of_two_places(
        record, decision, "alternatives", ("alternatives",), limits, (list,)
    )
    consensus = _one_of_two_places(record, decision, "consensus", ("consensus",), limits, (dict,))
    follow_up = _one_of_two_places(
        record, outcome, "follow_up", ("followUp", "follow_up"), limits, (dict,)
    )
    long_term = _one_of_two_places(
        record,
        outcome,
        "long_term_outcome",
        ("longTermOutcome", "long_term_outcome"),
        limits,
        (dict,),
    )
    return {
        "alternatives": json_text_or_none(_alternatives(alternatives)),
        "consensus": json_text_or_none(consensus),
        **_follow_up_fields(follow_up),
        **_long_term_fields(long_term),
    }


def record_to_row(record: dict, settings: Settings) -> dict[str, Any]:
    """The bronze columns of one record (without file / locator); RecordError if it breaks a
    rule."""
    limits = settings.limits
    tz = settings.timezone_for(SOURCE)
    decision_id = _optional_text(require(record, "id"), "id")
    metadata = decode_json_part(field(record, "metadata"), limits, "metadata") or {}
    session_id = first_of(
        record, *TOP_LEVEL["session_id"], default=first_of(metadata, "sessionId", "session_id")
    )
    if session_id is None:
        raise RecordError(
            "missing_field", "missing session id ('metadata.sessionId' / 'session_id')"
        )
    decision = decode_json_part(field(record, "decision"), limits, "decision")
    if decision is None:
        raise RecordError("missing_field", "missing field 'decision'")
    outcome = decode_json_part(field(record, "outcome"), limits, "outcome")
    rag, encoding = decode_rag_context(field(record, "rag_context"), limits)
    extra = {k: v for k, v in record.items() if k not in _KNOWN_TOP}
    return {
        "decision_id": decision_id,
        "session_id": _optional_text(session_id, "metadata.sessionId"),
        "context_id": _optional_text(
            first_of(metadata, "contextId", "context_id"), "metadata.contextId"
        ),
        "sequence_number": as_int(
            first_of(metadata, "sequenceNumber", "sequence_number"), "metadata.sequenceNumber"
        ),
        "actor_id": _optional_text(field(record, "actor_id"), "actorId"),
        "actor_type": _optional_text(field(record, "actor_type"), "actorType"),
        "actor_name": _optional_text(field(record, "actor_name"), "actorName"),
        "trigger_event_id": _optional_text(field(record, "trigger_event_id"), "triggerEventId"),
        "domain": _optional_text(field(record, "domain"), "domain"),
        **_decision_fields(decision),
        "system_prompt": _system_prompt(rag),
        "rag_context": json_text_or_none(rag),
        "rag_context_encoding": encoding,
        "visual_context": json_text_or_none(
            decode_json_part(field(record, "visual_context"), limits, "visual context")
        ),
        "coordination_snapshot": json_text_or_none(
            decode_json_part(
                field(record, "coordination_snapshot"), limits, "coordination snapshot"
            )
        ),
        "ambient_state": json_text_or_none(
            decode_json_part(field(record, "ambient_state"), limits, "ambient state")
        ),
        "metadata": json_text_or_none(metadata or None),
        **_outcome_fields(outcome, tz),
        **_extension_fields(record, decision, outcome, limits),
        "ts": parse_ts(field(record, "timestamp"), tz),
        "extra": json_text_or_none(extra or None),
    }


def bronze_row(
    file: RawFile, locator: str, ordinal: int, kind: str, record: dict, settings: Settings
) -> dict[str, Any]:
    """The whole bronze row of one record: where it was read (`ordinal` = line or row id)."""
    return {
        "file": file.rel_path,
        "locator": locator,
        "ordinal": ordinal,
        "file_kind": kind,
        **record_to_row(record, settings),
    }
