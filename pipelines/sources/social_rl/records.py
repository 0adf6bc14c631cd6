"""One raw document of the social_rl source → one bronze row (or a RecordError)."""

from __future__ import annotations

from typing import Any

from pipelines.sources.base import RecordError
from pipelines.sources.social_rl.fields import (
    each,
    json_text,
    located,
    opt_bool,
    opt_count,
    opt_dict,
    opt_score,
    opt_str,
)
from pipelines.sources.values import (
    as_float,
    as_int,
    expect_type,
    first_of,
    parse_ts,
    require,
    unknown_fields,
)

ROUND_FIELDS = frozenset(
    {
        "round_number",
        "messages",
        "feedback",
        "policy_adaptations",
        "synthesis",
        "duration_seconds",
        "round_config",
        "meta",
    }
)
MESSAGE_FIELDS = frozenset(
    {
        "agent_id",
        "content",
        "round_number",
        "turn_number",
        "timestamp",
        "prar_cue_used",
        "internal",
        "role",
        "context_frame",
        "validation_metadata",
    }
)
SCORES = ("engagement", "theoretical_alignment", "contribution_value", "synthesis_inclusion")
COUNTS = ("direct_references", "response_received", "analyst_mentions")
VECTOR_FIELDS = frozenset({"agent_id", "round_number", "concepts_embodied", *SCORES, *COUNTS})
DELTAS = ("engagement_delta", "alignment_delta", "contribution_delta")
ADAPTATION_FIELDS = frozenset(
    {
        "agent_id",
        "role",
        "adaptation_type",
        "cue",
        "reason",
        "round_number",
        "round",
        "deltas",
        "feedback_trigger",
    }
)
META_TEXT_FIELDS = (
    "experiment_id",
    "social_rl_version",
    "model",
    "framework",
    "framework_option",
    "prar_run_id",
    "prar_state_file",
)
META_FIELDS = frozenset({*META_TEXT_FIELDS, "timestamp"})


# ---------------------------------------------------------------- round files


def round_row(doc: Any, run_dir: str, file_round: int | None, tz: str) -> dict:
    expect_type(doc, dict, "round document")
    round_number = located("round_number", lambda: _round_number(doc, file_round))
    messages = located("messages", lambda: expect_type(require(doc, "messages"), list, "messages"))
    feedback = located("feedback", lambda: opt_dict(doc.get("feedback"), "feedback"))
    adaptations = doc.get("policy_adaptations")
    adaptations = (
        []
        if adaptations is None
        else located(
            "policy_adaptations", lambda: expect_type(adaptations, list, "policy_adaptations")
        )
    )
    meta = doc.get("meta")
    if meta is not None:
        located("meta", lambda: meta_fields(expect_type(meta, dict, "meta"), tz))
    return {
        "run_dir": run_dir,
        "round_number": round_number,
        "messages": each(_indexed("messages", messages), lambda m: message(m, tz)),
        "feedback": each(_keyed("feedback", feedback), lambda kv: feedback_vector(*kv)),
        "policy_adaptations": each(_indexed("policy_adaptations", adaptations), adaptation),
        "synthesis": located("synthesis", lambda: opt_str(doc, "synthesis")),
        "duration_seconds": located(
            "duration_seconds", lambda: as_float(doc.get("duration_seconds"), "duration_seconds")
        ),
        "round_config": json_text(doc.get("round_config")),
        "meta": json_text(meta),
        "extra": json_text(unknown_fields(doc, ROUND_FIELDS)),
    }


def _round_number(doc: dict, file_round: int | None) -> int:
    number = as_int(doc.get("round_number"), "round_number")
    if number is None:
        if file_round is None:
            raise RecordError("missing_field", "missing field 'round_number'")
        return file_round
    if number < 0:
        raise RecordError("bad_value", f"round_number is negative: {number}")
    if file_round is not None and number != file_round:
        raise RecordError(
            "bad_value", f"round_number {number} contradicts the file name (round{file_round})"
        )
    return number


def _indexed(path: str, items: list) -> list[tuple[str, Any]]:
    return [(f"{path}[{i}]", item) for i, item in enumerate(items)]


def _keyed(path: str, mapping: dict) -> list[tuple[str, Any]]:
    return [(f"{path}[{key!r}]", (key, value)) for key, value in mapping.items()]


def message(m: Any, tz: str) -> dict:
    expect_type(m, dict, "message")
    return {
        "agent_id": expect_type(require(m, "agent_id"), str, "agent_id"),
        "content": expect_type(require(m, "content"), str, "content"),
        "round_number": as_int(m.get("round_number"), "round_number"),
        "turn_number": as_int(m.get("turn_number"), "turn_number"),
        "ts": parse_ts(m.get("timestamp"), tz),
        "prar_cue_used": opt_str(m, "prar_cue_used"),
        "internal": opt_bool(m.get("internal"), "internal"),
        "message_role": opt_str(m, "role"),
        "context_frame": json_text(m.get("context_frame")),
        "validation": json_text(m.get("validation_metadata")),
        "extra": json_text(unknown_fields(m, MESSAGE_FIELDS)),
    }


def feedback_vector(key: str, v: Any) -> dict:
    expect_type(v, dict, "feedback vector")
    agent_id = expect_type(first_of(v, "agent_id", default=key), str, "agent_id")
    if agent_id != key:
        raise RecordError("bad_value", f"agent_id {agent_id!r} differs from its key {key!r}")
    concepts = v.get("concepts_embodied")
    if concepts is not None:
        expect_type(concepts, list, "concepts_embodied")
        for concept in concepts:
            expect_type(concept, str, "concepts_embodied item")
    row = {name: opt_score(v.get(name), name) for name in SCORES}
    row |= {name: opt_count(v.get(name), name) for name in COUNTS}
    return row | {
        "agent_id": agent_id,
        "round_number": as_int(v.get("round_number"), "round_number"),
        "concepts_embodied": concepts,
        "extra": json_text(unknown_fields(v, VECTOR_FIELDS)),
    }


def adaptation(a: Any) -> dict:
    """Both shapes: documented `{adaptation_type, cue, reason, feedback_trigger, round_number}`
    and real `{agent_id, role, deltas{...}, round}`."""
    expect_type(a, dict, "policy adaptation")
    round_number = as_int(a.get("round_number"), "round_number")
    alias = as_int(a.get("round"), "round")
    if None not in (round_number, alias) and round_number != alias:
        raise RecordError("bad_value", f"round {alias} and round_number {round_number} disagree")
    deltas = opt_dict(a.get("deltas"), "deltas")
    extra = unknown_fields(a, ADAPTATION_FIELDS) or {}
    if unknown_deltas := unknown_fields(deltas, frozenset(DELTAS)):
        extra["deltas"] = unknown_deltas
    row = {name: as_float(deltas.get(name), f"deltas.{name}") for name in DELTAS}
    return row | {
        "agent_id": opt_str(a, "agent_id"),
        "role": opt_str(a, "role"),
        "adaptation_type": opt_str(a, "adaptation_type"),
        "cue": opt_str(a, "cue"),
        "reason": opt_str(a, "reason"),
        "round_number": first_of({"n": round_number, "r": alias}, "n", "r"),
        "feedback_trigger": json_text(a.get("feedback_trigger")),
        "extra": json_text(extra),
    }


# ---------------------------------------------------------------- sibling files


def meta_fields(meta: dict, tz: str) -> dict:
    """Typed view of a meta block (inline `meta` or meta.json); other fields go to `extra`."""
    row = {name: located(name, lambda name=name: opt_str(meta, name)) for name in META_TEXT_FIELDS}
    row["written_at"] = located("timestamp", lambda: parse_ts(meta.get("timestamp"), tz))
    row["extra"] = json_text(unknown_fields(meta, META_FIELDS))
    return row


def meta_row(doc: Any, run_dir: str, tz: str) -> dict:
    return {"run_dir": run_dir} | meta_fields(expect_type(doc, dict, "meta document"), tz)


def metrics_row(doc: Any, run_dir: str) -> dict:
    return {
        "run_dir": run_dir,
        "metrics": json_text(expect_type(doc, dict, "metrics document")) or "{}",
    }


def prar_state_row(doc: Any, run_name: str) -> dict:
    expect_type(doc, dict, "PRAR state document")
    step = doc.get("current_step")
    if step is not None:
        located("current_step", lambda: expect_type(step, (str, int, float), "current_step"))
    return {
        "run_name": run_name,
        "current_step": None if step is None else str(step),
        "state": json_text(doc) or "{}",
    }
