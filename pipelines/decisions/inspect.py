"""One decision in full (`turnlake decision inspect ID`): who decided, the identity / system
prompt, conversation history, ambient state and coordination snapshot it saw, the decision, the
companion suggestion, the outcome and every feedback row (oldest first), and `messages`: the
prompt exactly as the release's builder made it."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import orjson
import polars as pl


def _json(text: str | None) -> Any:
    return None if text is None else orjson.loads(text)


def _feedback_rows(feedback: pl.DataFrame, decision_id: str) -> list[dict[str, Any]]:
    rows = feedback.filter(pl.col("decision_id") == decision_id).sort(
        ["observed_at", "name", "feedback_id"], nulls_last=True
    )
    return [
        {**row, "attributes": _json(row["attributes"])}
        for row in rows.select(
            "feedback_id",
            "name",
            "value_num",
            "value_text",
            "scale",
            "source_kind",
            "observed_at",
            "attributes",
        ).iter_rows(named=True)
    ]


def _outcome(feedback: list[dict[str, Any]]) -> Any:
    """The source's own `outcome` object, as the feedback rows it produced recorded it."""
    for row in feedback:
        outcome = (row["attributes"] or {}).get("outcome")
        if outcome is not None:
            return _json(outcome)
    return None


def inspect_decision(row: dict[str, Any], feedback: pl.DataFrame) -> dict[str, Any]:
    """The full view of one `decision_index` row, with its feedback rows from silver."""
    context = _json(row["context"]) or {}
    rag = context.get("rag_context") or {}
    identity = rag.get("identity") if isinstance(rag, dict) else None
    attributes = _json(row["attributes"]) or {}
    signals = _feedback_rows(feedback, row["decision_id"])
    return {
        "decision_id": row["decision_id"],
        "session_id": row["session_id"],
        "episode_id": row["episode_id"],
        "ts": row["ts"],
        "actor": {
            "id": row["actor_id"],
            "name": row["actor_name"],
            "type": row["actor_type"],
            "native_type": row["native_actor_type"],
        },
        "domain": row["domain"],
        "identity": identity,
        "system_prompt": (identity or {}).get("systemPrompt"),
        "conversation_history": rag.get("conversationHistory") if isinstance(rag, dict) else None,
        "ambient_state": context.get("ambient_state"),
        "coordination_snapshot": context.get("coordination_snapshot"),
        "visual_context": context.get("visual_context"),
        "context_hash": row["context_hash"],
        "decision": {
            "action": row["action"],
            "confidence": row["confidence"],
            "reasoning": row["reasoning"],
            "response": row["response"],
            "model_used": attributes.get("model_used"),
            "candidates": row["candidates"],
            "alternatives": _json(attributes.get("alternatives")),
        },
        "companion_suggestion": _json(attributes.get("companion_suggestion")),
        "suggestion_followed": row["suggestion_followed"],
        "outcome": _outcome(signals),
        "reward": {
            "value": row["reward"],
            "rule": row["reward_rule"],
            "feedback_ids": row["feedback_ids"],
        },
        "feedback": signals,
        "messages": row["prompt"],
    }


def to_json(view: dict[str, Any]) -> str:
    return orjson.dumps(view, option=orjson.OPT_INDENT_2 | orjson.OPT_NAIVE_UTC).decode()


def _compact(value: Any) -> str:
    if isinstance(value, datetime):
        return value.isoformat()
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def render_decision(view: dict[str, Any]) -> str:
    """The view as readable text: one labelled section per part, the messages last."""
    actor = view["actor"]
    decision = view["decision"]
    lines = [
        f"decision {view['decision_id']}  ({view['ts']})",
        f"session {view['session_id']}  domain {view['domain']}",
        f"actor {actor['name']} ({actor['id']}, {actor['type']} / {actor['native_type']})",
        "",
        "identity / system prompt:",
        f"  {view['system_prompt']}",
        "conversation history:",
        *[
            f"  [{m.get('role')}] {m.get('name') or ''}: {m.get('content')}"
            for m in view["conversation_history"] or []
        ],
        f"ambient state: {_compact(view['ambient_state'])}",
        f"coordination snapshot: {_compact(view['coordination_snapshot'])}",
        (
            f"companion suggestion: {_compact(view['companion_suggestion'])}"
            f"  (followed: {view['suggestion_followed']})"
        ),
        "",
        (
            f"decision: {decision['action']}  confidence {decision['confidence']}"
            f"  model {decision['model_used']}"
        ),
        f"  reasoning: {decision['reasoning']}",
        f"  response: {decision['response']}",
        f"outcome: {_compact(view['outcome'])}",
        f"reward: {view['reward']['value']} ({view['reward']['rule']})",
        f"feedback ({len(view['feedback'])} rows, oldest first):",
        *[
            f"  {_compact(f['observed_at']) if f['observed_at'] else '-'}  {f['name']}"
            f" = {f['value_num'] if f['value_num'] is not None else f['value_text']}"
            f" [{f['scale']}] by {f['source_kind']}"
            for f in view["feedback"]
        ],
        f"replays ({len(view.get('replays', []))}):",
        *[
            f"  {r['persona']}: {r['action']} (agrees: {r['agrees']})"
            for r in view.get("replays", [])
        ],
        "",
        "messages (the prompt as released):",
        *[f"  --- {m['role']}\n{_indent(m['content'])}" for m in view["messages"]],
    ]
    return "\n".join(lines)


def _indent(text: str | None) -> str:
    return "\n".join(f"  {line}" for line in (text or "").splitlines())
