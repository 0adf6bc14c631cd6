"""One OpenAssistant message tree → one bronze row (its nodes flattened in depth-first pre-order).

Field rules: `role` is `prompter` or `assistant`; `text` a string; `rank` a whole number or absent
(absent where a prompt had one reply, or unranked); `emojis` an object of counts
(`{"+1": 3, "_skip_reply": 1}`) or null; `labels` an object of `{value, count}` (or plain numbers)
or null; `deleted` / `synthetic` absent = false; `review_result` absent = not reviewed (null).
Each node also records whether any of its ancestors is deleted, unreviewed or synthetic, so silver
can drop an excluded message together with its replies without walking the tree again.
"""

from __future__ import annotations

from typing import Any

from pipelines.sources.base import RecordError, dumps, stable_hash
from pipelines.sources.values import (
    as_float,
    as_int,
    expect_type,
    parse_ts,
    require,
    unknown_fields,
)

NODE_FIELDS = frozenset(
    {
        "message_id",
        "parent_id",
        "text",
        "role",
        "lang",
        "rank",
        "review_count",
        "review_result",
        "deleted",
        "synthetic",
        "model_name",
        "user_id",
        "created_date",
        "emojis",
        "labels",
        "replies",
    }
)
TREE_FIELDS = frozenset({"message_tree_id", "tree_state", "prompt"})
ROLES = ("prompter", "assistant")


def tree_row(record: Any, dataset: str, tz: str) -> dict[str, Any]:
    record = expect_type(record, dict, "a message tree")
    tree_id = _text(require(record, "message_tree_id"), "'message_tree_id'")
    root = expect_type(require(record, "prompt"), dict, "'prompt'")
    tree_state = record.get("tree_state")
    if tree_state is not None:
        expect_type(tree_state, str, "'tree_state'")
    extra = unknown_fields(record, TREE_FIELDS)
    return {
        "dataset": dataset,
        "message_tree_id": tree_id,
        "tree_state": tree_state,
        "messages": flatten(root, tz),
        "record_hash": stable_hash(dataset, record),
        "extra": dumps(extra) if extra else None,
    }


def flatten(root: dict, tz: str) -> list[dict[str, Any]]:
    """Every node in depth-first pre-order; a bad node names its path (`prompt.replies[1]...`)."""
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    no_flags = {"deleted_above": False, "unreviewed_above": False, "synthetic_above": False}
    stack: list[tuple[Any, str, str | None, int, dict[str, bool]]] = [
        (root, "prompt", None, 0, no_flags)
    ]
    while stack:
        node, where, parent_id, depth, above = stack.pop()
        try:
            row = _node(expect_type(node, dict, "a message"), parent_id, tz)
            if row["message_id"] in seen:
                raise RecordError("bad_value", f"message_id {row['message_id']!r} appears twice")
            replies = expect_type(node.get("replies") or [], list, "'replies'")
        except RecordError as err:
            raise RecordError(err.kind, f"{where}: {err.message}") from None
        seen.add(row["message_id"])
        out.append({**row, "depth": depth, **above})
        below = {
            "deleted_above": above["deleted_above"] or row["deleted"],
            "unreviewed_above": above["unreviewed_above"] or row["review_result"] is not True,
            "synthetic_above": above["synthetic_above"] or row["synthetic"],
        }
        for i in reversed(range(len(replies))):
            stack.append((replies[i], f"{where}.replies[{i}]", row["message_id"], depth + 1, below))
    return out


def _node(node: dict, parent_id: str | None, tz: str) -> dict[str, Any]:
    message_id = _text(require(node, "message_id"), "'message_id'")
    written_parent = node.get("parent_id")
    if written_parent is not None and _text(written_parent, "'parent_id'") != parent_id:
        raise RecordError(
            "bad_value", f"'parent_id' {written_parent!r} is not its parent's id {parent_id!r}"
        )
    role = expect_type(require(node, "role"), str, "'role'")
    if role not in ROLES:
        raise RecordError("bad_value", f"'role' {role!r} is neither 'prompter' nor 'assistant'")
    extra = unknown_fields(node, NODE_FIELDS)
    return {
        "message_id": message_id,
        "parent_id": parent_id,
        "role": role,
        "text": expect_type(require(node, "text"), str, "'text'"),
        "lang": _optional_text(node.get("lang"), "'lang'"),
        "rank": as_int(node.get("rank"), "'rank'"),
        "review_count": as_int(node.get("review_count"), "'review_count'"),
        "review_result": _optional_bool(node.get("review_result"), "'review_result'"),
        "deleted": bool(_optional_bool(node.get("deleted"), "'deleted'")),
        "synthetic": bool(_optional_bool(node.get("synthetic"), "'synthetic'")),
        "model_name": _optional_text(node.get("model_name"), "'model_name'"),
        "user_id": _optional_text(node.get("user_id"), "'user_id'"),
        "created_at": parse_ts(node.get("created_date"), tz),
        "emojis": _emojis(node.get("emojis")),
        "labels": _labels(node.get("labels")),
        "extra": dumps(extra) if extra else None,
    }


def _emojis(value: Any) -> list[dict[str, Any]] | None:
    if value is None:
        return None
    counts = expect_type(value, dict, "'emojis'")
    return [{"name": name, "count": as_int(n, f"emoji {name!r}")} for name, n in counts.items()]


def _labels(value: Any) -> list[dict[str, Any]] | None:
    if value is None:
        return None
    labels = expect_type(value, dict, "'labels'")
    out = []
    for name, label in labels.items():
        what = f"label {name!r}"
        if isinstance(label, dict):
            value_num = as_float(label.get("value"), f"{what} value")
            count = as_int(label.get("count"), f"{what} count")
        else:
            value_num, count = as_float(label, what), None
        out.append({"name": name, "value": value_num, "count": count})
    return out


def _text(value: Any, what: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise RecordError("bad_type", f"{what} should be a string, got {type(value).__name__}")
    text = str(value).strip()
    if not text:
        raise RecordError("missing_field", f"{what} is empty")
    return text


def _optional_text(value: Any, what: str) -> str | None:
    return None if value is None else expect_type(value, str, what)


def _optional_bool(value: Any, what: str) -> bool | None:
    return None if value is None else expect_type(value, bool, what)
