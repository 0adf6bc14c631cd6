"""Demo raw data for the `dialogue` source: chat conversations and feedback events.

Two datasets with different `turn_index` bases (also written to `dialogues/README.md`):
- `support` counts turns from 0 (the default; nothing to configure);
- `tutoring` counts turns from 1 and MUST be configured:
  `Settings(dialogue_turn_index_base={"tutoring": 1})`. Without it, its events point one turn
  too far and the last-turn ones are quarantined as `bad_value`.
Files directly under `dialogues/` form the dataset `default`.

Variations: many files per dataset, the same conversation re-delivered (identical and changed),
role names beyond user/assistant, numeric and label qualities, naive / `Z` / epoch timestamps,
extra fields, repeated events for one turn, duplicate deliveries (same event id; same content),
episode-level events, orphans, out-of-range and negative indexes, non-numeric ratings, rewards out
of range, and bad records: invalid JSON, a truncated last line, missing and mistyped fields,
absurd timestamps.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from pipelines.demo.dialogue.texts import COMMENTS, SUPPORT_TOPICS, TUTORING_TOPICS

TURN_INDEX_BASE = {"support": 0, "tutoring": 1}

BAD_RATINGS = ["thumbs_up", "👍", {"score": 1}]


def write(raw_root: Path, rng: random.Random, scale: int = 1) -> None:
    start = datetime(2024, 6, 1, 9, 0, tzinfo=UTC)
    support = _conversations("support", SUPPORT_TOPICS, 12 * scale, rng, start)
    tutoring = _conversations("tutoring", TUTORING_TOPICS, 10 * scale, rng, start)
    _write_dataset(raw_root, "support", support, 2 * scale, "day-{:02d}.jsonl")
    _write_dataset(
        raw_root, "tutoring", tutoring, 2 * scale, "batch-{:03d}.jsonl", truncate_last=True
    )
    _write_lines(raw_root / "dialogues" / "imported.jsonl", [_dumps(c) for c in _legacy(rng)])
    _write_events(raw_root, "support", support, 2 * scale, rng, with_ids=True)
    _write_events(raw_root, "tutoring", tutoring, 2 * scale, rng, with_ids=False)
    _write_readme(raw_root)


# ---------------------------------------------------------------- conversations


def _conversations(
    dataset: str, topics: list[tuple[str, ...]], n: int, rng: random.Random, start: datetime
) -> list[dict[str, Any]]:
    roles = ("user", "assistant") if dataset == "support" else ("student", "tutor")
    out = []
    for i in range(n):
        lines = rng.choice(topics)
        n_turns = rng.choice((2, 4, 4))
        at = start + timedelta(hours=7 * i, minutes=rng.randrange(60))
        turns = [{"role": roles[t % 2], "content": lines[t]} for t in range(n_turns)]
        if dataset == "support" and rng.random() < 0.3:
            turns.insert(
                0, {"role": "system", "content": "You are a friendly, concise support assistant."}
            )
        if rng.random() < 0.3:  # per-turn epoch timestamps, as some exporters write them
            for t, turn in enumerate(turns):
                turn["ts"] = int((at + timedelta(seconds=40 * t)).timestamp())
        conversation = {
            "conversation_id": f"{dataset[:3]}-{1000 + i}",
            "turns": turns,
            "tags": rng.sample(
                ["billing", "account", "network", "mobile", "shipping", "escalated"],
                k=rng.randrange(3),
            ),
            "quality": _quality(dataset, rng),
            "created_at": _timestamp(at, rng),
        }
        if rng.random() < 0.4:
            conversation["channel"] = rng.choice(["web", "ios", "android", "email"])
        out.append(conversation)
    return out


def _quality(dataset: str, rng: random.Random) -> Any:
    if dataset == "tutoring":
        return rng.choice([3, 4, 4, 5, None])
    return rng.choice(
        [
            round(rng.uniform(0.3, 1.0), 2),
            str(round(rng.uniform(0.3, 1.0), 2)),
            "needs_review",
            None,
        ]
    )


def _timestamp(at: datetime, rng: random.Random) -> Any:
    style = rng.randrange(3)
    if style == 0:
        return at.isoformat().replace("+00:00", "Z")
    return at.replace(tzinfo=None).isoformat(sep=" ") if style == 1 else at.timestamp()


def _legacy(rng: random.Random) -> list[dict[str, Any]]:
    """Old export straight under dialogues/: integer ids, Human/AI roles, no tags."""
    return [
        {
            "conversation_id": 7000 + i,
            "turns": [{"role": "Human", "content": q}, {"role": "AI", "content": a}],
            "exported_by": "legacy-export-1.3",
        }
        for i, (q, a, *_rest) in enumerate(rng.sample(SUPPORT_TOPICS, 2))
    ]


def _write_dataset(
    raw_root: Path,
    dataset: str,
    conversations: list[dict],
    n_files: int,
    pattern: str,
    truncate_last: bool = False,
) -> None:
    chunks = [conversations[i::n_files] for i in range(n_files)]
    first, last = chunks[0], chunks[-1]
    last.append(first[0])  # re-delivered unchanged: stored once
    changed = orjson.loads(orjson.dumps(first[1]))
    changed["turns"][-1]["content"] += " (edited by a supervisor)"
    last.append(changed)  # re-delivered changed: later file wins, earlier copy quarantined
    for n, chunk in enumerate(chunks, start=1):
        lines = [_dumps(c) for c in chunk]
        if n == 1:
            lines[1:1] = _bad_conversations(dataset)
        if n == 2:
            lines.insert(1, "")  # blank line in the middle of a file
        text_end = "\n"
        if truncate_last and n == n_files:
            lines.append(_dumps(chunk[0])[:57])  # writer killed mid-line
            text_end = ""
        _write_lines(raw_root / "dialogues" / dataset / pattern.format(n), lines, end=text_end)


def _bad_conversations(dataset: str) -> list[str]:
    return [
        '{"conversation_id": "'
        + dataset
        + '-bad-1", "turns": [{"role": "user", "content": "hi"},]}',
        _dumps({"turns": [{"role": "user", "content": "Is anyone there?"}]}),
        _dumps({"conversation_id": f"{dataset}-bad-3", "turns": "user: my order is late"}),
        _dumps(
            {"conversation_id": f"{dataset}-bad-4", "turns": [{"content": "no role on this one"}]}
        ),
        _dumps(
            {
                "conversation_id": f"{dataset}-bad-5",
                "turns": [],
                "created_at": "2207-03-01T00:00:00Z",
            }
        ),
    ]


# ---------------------------------------------------------------- feedback events


def _write_events(
    raw_root: Path,
    dataset: str,
    conversations: list[dict],
    n_files: int,
    rng: random.Random,
    with_ids: bool,
) -> None:
    base = TURN_INDEX_BASE[dataset]
    events = [e for c in conversations for e in _events_for(c, base, rng)]
    events += _odd_events(dataset, conversations, base)
    if with_ids:
        for n, e in enumerate(events):
            e["event_id"] = f"evt-{dataset[:2]}-{n:05d}"
    lines = [_dumps(e) for e in events]
    chunks = [lines[i::n_files] for i in range(n_files)]
    chunks[-1] += chunks[0][:3]  # at-least-once delivery: the same events arrive again
    cid = conversations[0]["conversation_id"]
    chunks[0].insert(
        2, _dumps({"conversation_id": cid, "turn_index": 1, "rating": 1})[:-1]
    )  # cut "}"
    chunks[0].insert(3, _dumps({"conversation_id": cid, "turn_index": "2", "rating": 1}))
    for n, chunk in enumerate(chunks, start=1):
        _write_lines(raw_root / "feedback" / dataset / f"events-{n:02d}.jsonl", chunk)


def _events_for(conversation: dict, base: int, rng: random.Random) -> list[dict]:
    replies = [
        i for i, t in enumerate(conversation["turns"]) if t["role"] in ("assistant", "tutor")
    ]
    events = []
    for i in rng.sample(replies, k=min(len(replies), rng.randrange(3))):
        for _ in range(rng.choice((1, 1, 2))):  # sometimes several users rate the same reply
            at = datetime(
                2024, 6, rng.randrange(1, 29), rng.randrange(24), rng.randrange(60), tzinfo=UTC
            )
            event = {
                "conversation_id": conversation["conversation_id"],
                "turn_index": i + base,
                "rating": rng.choice((1, 1, 0, -1)),
                "created_at": _timestamp(at, rng),
                "user_id": f"u-{rng.randrange(500)}",
            }
            if rng.random() < 0.3:
                event["reward"] = round(rng.uniform(-1, 1), 2)
            if rng.random() < 0.3:
                event["comment"] = rng.choice(COMMENTS)
            events.append(event)
    return events


def _odd_events(dataset: str, conversations: list[dict], base: int) -> list[dict]:
    first, second = conversations[0], conversations[1]
    cid = first["conversation_id"]
    return [
        {
            "conversation_id": cid,
            "rating": 1,
            "comment": "Overall a good chat.",
        },  # whole conversation
        {"conversation_id": f"{dataset[:3]}-9999", "turn_index": base, "rating": -1},  # orphan
        {
            "conversation_id": cid,
            "turn_index": len(first["turns"]) + base,
            "rating": 1,
        },  # past the end
        {"conversation_id": cid, "turn_index": base - 1, "rating": 1},  # negative after the base
        {
            "conversation_id": second["conversation_id"],
            "turn_index": base + 1,
            "rating": BAD_RATINGS[len(dataset) % 3],
        },
        {
            "conversation_id": second["conversation_id"],
            "turn_index": base + 1,
            "reward": 3.5,
        },  # reward out of range
        {
            "conversation_id": cid,
            "turn_index": base,
            "rating": 1,
            "created_at": 99999999999999999,
        },  # absurd time
    ]


# ---------------------------------------------------------------- files


def _dumps(obj: Any) -> str:
    return orjson.dumps(obj).decode()


def _write_lines(path: Path, lines: list[str], end: str = "\n") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + end, encoding="utf-8")


def _write_readme(raw_root: Path) -> None:
    bases = "\n".join(f"- `{d}`: turn_index counts from {b}" for d, b in TURN_INDEX_BASE.items())
    text = (
        "# Demo dialogue datasets\n\n"
        "Dataset = first folder under `dialogues/` and `feedback/` (`default` for files directly "
        "under them).\n\n"
        f"{bases}\n- `default`: no feedback events\n\n"
        "The 1-based dataset must be configured, e.g. "
        '`Settings(dialogue_turn_index_base={"tutoring": 1})`; otherwise its feedback points one '
        "turn too far.\n"
    )
    path = raw_root / "dialogues" / "README.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
