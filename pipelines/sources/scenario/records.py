"""One parsed JSON record of a scenario dialog file → one bronze row (or a RecordError).

Seed signals (`checkpoint_timing`, `question_quality`, `user_engagement_level`,
`feedback_specificity`, `engagement_indicators`, `validated_output`, `new_strategic_context`,
...) are documented in one block but real logs write them in others: each is read from the first
of `quality_signals`, `user_response.signals`, `outcome` (and `context` for the entry's counts)
that holds it. The whole objects stay in their JSON columns, so a value found twice is never
lost.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipelines.sources.base import RecordError, dumps_or_none
from pipelines.sources.scenario.fields import (
    count,
    flag,
    label,
    mapping,
    present_key,
    text,
    unit_score,
)
from pipelines.sources.values import as_float, parse_ts, require, unknown_fields

ENTRY_FIELDS = frozenset(
    {
        "timestamp",
        "scenario_id",
        "phase",
        "round",
        "context",
        "moderator_action",
        "outcome",
        "quality_signals",
    }
)
METADATA_FIELDS = frozenset({"timestamp", "scenario_id", "scenario_metadata"})
# Alternative spellings, preferred first. Only the spelling actually used counts as mapped:
# a second spelling present in the same record goes to `extra` instead of vanishing.
TYPE_KEYS = ("interaction_type", "type")
MODERATOR_KEYS = ("moderator_message", "moderator_response")
# The hook's fallback logger writes the user's prompt as a top-level `content`.
USER_KEYS = ("user_response", "user_message", "content")
DECISION_KEYS = ("user_decision", "decision")
# Where a seed signal may sit, searched in this order (see the module docstring).
SIGNAL_BLOCKS = ("quality_signals", "signals", "outcome", "context")
LABEL_SIGNALS = (
    "checkpoint_timing",
    "question_quality",
    "user_engagement_level",
    "feedback_specificity",
)
METADATA_COUNTS = (
    "total_phases",
    "total_checkpoints",
    "total_specialist_consultations",
    "total_iterations_triggered",
)


@dataclass(frozen=True)
class FileContext:
    file: str
    state: str
    scenario_id: str


def record_row(obj: Any, ctx: FileContext, tz: str) -> tuple[str, dict]:
    """(bronze table, row) for one record; raises RecordError for a record that breaks the
    format."""
    if isinstance(obj, list):
        raise RecordError("bad_type", "record is a JSON array; a dialog entry must be an object")
    if not isinstance(obj, dict):
        raise RecordError("bad_type", f"record is a JSON {type(obj).__name__}; expected an object")
    if "scenario_metadata" in obj:
        return "scenario_metadata", metadata_row(obj, ctx, tz)
    return "scenario_entries", entry_row(obj, ctx, tz)


def _common(obj: dict, ctx: FileContext, ts: Any, known: frozenset[str]) -> dict:
    type_key = present_key(obj, *TYPE_KEYS)
    known = known | {type_key}
    return {
        "file": ctx.file,
        "state": ctx.state,
        "scenario_id": ctx.scenario_id,
        "entry_scenario_id": text(obj.get("scenario_id"), "scenario_id"),
        "ts": ts,
        "interaction_type": text(obj.get(type_key), "interaction_type") if type_key else None,
        "extra": dumps_or_none(unknown_fields(obj, known)),
    }


def entry_row(obj: dict, ctx: FileContext, tz: str) -> dict:
    ts = parse_ts(require(obj, "timestamp"), tz)
    keys = {group: present_key(obj, *group) for group in (MODERATOR_KEYS, USER_KEYS, DECISION_KEYS)}
    row = _common(obj, ctx, ts, ENTRY_FIELDS | {k for k in keys.values() if k})
    row["phase"] = text(obj.get("phase"), "phase", numbers=True)
    row["round"] = count(obj.get("round"), "round")
    row["context"] = dumps_or_none(mapping(obj.get("context"), "context"))
    messages = _messages(obj, keys[MODERATOR_KEYS], keys[USER_KEYS])
    signals = messages.pop("signals")
    row.update(messages)
    row.update(_moderator_action(obj.get("moderator_action")))
    row.update(_user_decision(obj.get(keys[DECISION_KEYS]) if keys[DECISION_KEYS] else None))
    outcome = mapping(obj.get("outcome"), "outcome")
    quality = mapping(obj.get("quality_signals"), "quality_signals")
    row.update(_outcome(outcome))
    row.update(_quality(quality))
    blocks = {
        "quality_signals": quality,
        "signals": signals,
        "outcome": outcome,
        "context": mapping(obj.get("context"), "context"),
    }
    row.update(_seed_signals(blocks))
    return row


def metadata_row(obj: dict, ctx: FileContext, tz: str) -> dict:
    meta = mapping(obj["scenario_metadata"], "scenario_metadata")
    if meta is None:
        raise RecordError("missing_field", "scenario_metadata is null")
    row = _common(obj, ctx, parse_ts(obj.get("timestamp"), tz), METADATA_FIELDS)
    for name in METADATA_COUNTS:
        row[name] = count(meta.get(name), f"scenario_metadata.{name}")
    row["user_satisfaction_overall"] = unit_score(
        meta.get("user_satisfaction_overall"), "scenario_metadata.user_satisfaction_overall"
    )
    hours = as_float(meta.get("completion_time_hours"), "scenario_metadata.completion_time_hours")
    if hours is not None and hours < 0:
        raise RecordError(
            "bad_value", f"scenario_metadata.completion_time_hours is negative: {hours}"
        )
    row["completion_time_hours"] = hours
    row["scenario_successful"] = flag(
        meta.get("scenario_successful"), "scenario_metadata.scenario_successful"
    )
    row["metadata"] = dumps_or_none(meta) or "{}"
    return row


# ---------------------------------------------------------------- entry parts


def _messages(obj: dict, moderator_key: str | None, user_key: str | None) -> dict:
    mod_text, mod_type, mod_fields = message(obj.get(moderator_key), moderator_key or "")
    user_text, user_type, user_fields = message(obj.get(user_key), user_key or "")
    signals = mapping((user_fields or {}).get("signals"), f"{user_key}.signals") or {}
    return {
        # A `moderator_response` (user-question entries) answers the user: the user spoke first.
        "user_first": moderator_key == "moderator_response",
        "moderator_text": mod_text,
        "moderator_message_type": mod_type,
        "moderator_fields": dumps_or_none(mod_fields),
        "user_text": user_text,
        "user_response_type": user_type,
        "user_fields": dumps_or_none(user_fields),
        "provided_correction": flag(
            signals.get("provided_correction"), "signals.provided_correction"
        ),
        "correction_magnitude": text(
            signals.get("correction_magnitude"), "signals.correction_magnitude"
        ),
        "expressed_satisfaction": flag(
            signals.get("expressed_satisfaction"), "signals.expressed_satisfaction"
        ),
        "signals": signals,
    }


def message(value: Any, what: str) -> tuple[str | None, str | None, dict | None]:
    """(text, message type, other fields) of a message given as an object or a plain string."""
    if value is None:
        return None, None, None
    if isinstance(value, str):
        return value, None, None
    if not isinstance(value, dict):
        raise RecordError(
            "bad_type", f"{what} should be text or an object, got {type(value).__name__}"
        )
    obj = value
    body = text(obj.get("content"), f"{what}.content")
    kind = text(obj.get("message_type", obj.get("response_type")), f"{what}.message_type")
    rest = {k: v for k, v in obj.items() if k not in ("content", "message_type", "response_type")}
    return body, kind, rest or None


def _moderator_action(value: Any) -> dict:
    if isinstance(value, str):
        value = {"action_taken": value}
    action = mapping(value, "moderator_action") or {}
    return {
        "action_taken": text(action.get("action_taken"), "moderator_action.action_taken"),
        "significance_evaluation": text(
            action.get("significance_evaluation"), "moderator_action.significance_evaluation"
        ),
        "proposed_action": text(action.get("proposed_action"), "moderator_action.proposed_action"),
        "moderator_reasoning": text(action.get("reasoning"), "moderator_action.reasoning"),
        "moderator_action": dumps_or_none(action),
    }


def _user_decision(value: Any) -> dict:
    if isinstance(value, str):
        value = {"decision": value}
    decision = mapping(value, "user_decision") or {}
    seconds = as_float(decision.get("decision_time_seconds"), "user_decision.decision_time_seconds")
    if seconds is not None and seconds < 0:
        raise RecordError(
            "bad_value", f"user_decision.decision_time_seconds is negative: {seconds}"
        )
    return {
        "user_decision": text(decision.get("decision"), "user_decision.decision"),
        "decision_reasoning": text(decision.get("reasoning"), "user_decision.reasoning"),
        "decision_time_seconds": seconds,
        "user_decision_fields": dumps_or_none(decision),
    }


def _outcome(outcome: dict | None) -> dict:
    outcome = outcome or {}
    flags = ("user_validated", "checkpoint_successful", "iteration_triggered", "phase_completed")
    row = {name: flag(outcome.get(name), f"outcome.{name}") for name in flags}
    row["user_satisfaction_score"] = unit_score(
        outcome.get("user_satisfaction_score"), "outcome.user_satisfaction_score"
    )
    row["outcome"] = dumps_or_none(outcome)
    return row


def _quality(quality: dict | None) -> dict:
    quality = quality or {}
    return {
        "moderator_effectiveness": text(
            quality.get("moderator_effectiveness"), "quality_signals.moderator_effectiveness"
        ),
        "decision_confidence": text(
            quality.get("decision_confidence"), "quality_signals.decision_confidence"
        ),
        "quality_signals": dumps_or_none(quality),
    }


def _seed_signals(blocks: dict[str, dict | None]) -> dict:
    """The seed's signals from whichever block holds them (first of SIGNAL_BLOCKS)."""

    def found(name: str) -> tuple[Any, str]:
        for block in SIGNAL_BLOCKS:
            value = (blocks.get(block) or {}).get(name)
            if value is not None:
                return value, f"{block}.{name}"
        return None, name

    row = {name: label(*found(name)) for name in LABEL_SIGNALS}
    row["validated_output"] = flag(*found("validated_output"))
    row["new_strategic_context"] = flag(*found("new_strategic_context"))
    row["synthesis_length_words"] = count(*found("synthesis_length_words"))
    row["checkpoint_number"] = count(*found("checkpoint_number"))
    indicators, _ = found("engagement_indicators")
    row["engagement_indicators"] = dumps_or_none(indicators)
    return row
