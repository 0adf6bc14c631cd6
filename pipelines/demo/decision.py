"""Demo raw data for `decision`: a CoordinationDecision SQLite database plus an overlapping JSONL
export.

Covers every variation of DESIGN §1 (gzip+base64 and plain rag_context, epoch-ms and ISO
timestamps, 0–1 and 1–5 ratings, null outcomes, repeated system prompts, companion suggestions
followed and overridden, the same decision in both files) and a few bad records of each kind.
Raters keep to one scale each, as a rating UI does: users and the community give 1–5 stars, self-
and system ratings are on 0–1. Seed 004's optional fields appear too: `outcome.followUp`,
`decision.alternatives`, and (in the export) top-level `consensus` and `longTermOutcome`. One
extra session in the export holds one decision per rule case (decision_cases.py).
"""

from __future__ import annotations

import base64
import gzip
import random
import sqlite3
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from pipelines.demo.decision_cases import rule_cases
from pipelines.demo.decision_personas import PERSONAS

HUMANS = ["Joel", "Ana", "Priya", "Marcus"]
ROOMS = ["general", "academy", "dev-updates", "incident-review"]
USER_LINES = [
    "Anyone know why the widget build is red on main since this morning?",
    "Can someone explain the difference between a mutex and a semaphore, simply?",
    "Standup is moved to 10:30 today, right?",
    "PR 412 adds retries to the cache client, could use a second pair of eyes.",
    "What's the cheapest way to run the eval suite overnight?",
    "I keep getting 'database is locked' from the session store under load.",
    "Thanks all, that fixed it!",
    "Is it worth switching the embeddings model before the demo on Friday?",
    "Summarise yesterday's incident for the people who missed the call?",
    "Who owns the flaky snapshot test in the persona module?",
]
REPLIES = [
    "The lockfile drifted after the dependency bump; a clean install on CI should turn it green.",
    "A mutex is one key to one room; a semaphore is a bowl of N keys, so up to N people get in.",
    "Yes, 10:30 in the usual room, the calendar invite was updated an hour ago.",
    "The retry loop looks fine, but add jitter so all clients don't retry in lockstep.",
    "Spot instances with a checkpoint every 20 minutes cut the cost by roughly two thirds.",
    "SQLite allows one writer at a time; enable WAL mode and keep transactions short.",
    "Glad it worked! I'll note the fix in the runbook.",
    "I'd wait: swapping models two days before a demo adds risk for a small gain.",
    "Short version: the cache node ran out of disk at 14:02 and we failed over by 14:20.",
    "git blame points to the persona refactor in March; Priya touched it last.",
]
REASONS = {
    "POSTED": [
        "Direct question in my area, nobody has answered yet.",
        "I was mentioned by name.",
        "The thread stalled and I have a concrete fix.",
    ],
    "SILENT": [
        "Another persona is already answering.",
        "Off-topic for my role.",
        "Conversation temperature is low; a reply would be noise.",
    ],
}
RATED_BY = ["user", "self", "system", "community"]
STAR_RATERS = ("user", "community")  # rate on 1–5; the others on 0–1


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def gzip_text(payload: bytes) -> str:
    return "gzip:" + base64.b64encode(gzip.compress(payload, compresslevel=9, mtime=0)).decode()


def _outcome(rng: random.Random, ts_ms: int, good: bool) -> dict[str, Any] | None:
    if rng.random() < 0.35:
        return None  # not rated yet
    rated_by = rng.choice(RATED_BY)
    if rated_by in STAR_RATERS:
        rating: float = rng.choice([4, 5]) if good else rng.choice([1, 2])
    else:
        rating = round(rng.uniform(0.6, 1.0) if good else rng.uniform(0.0, 0.45), 2)
    outcome = {
        "wasGoodDecision": good,
        "rating": rating,
        "ratedBy": rated_by,
        "ratedAt": ts_ms + rng.randint(60_000, 3_600_000),
        "reasoning": "Helpful and on time." if good else "Added noise or was wrong.",
    }
    if rng.random() < 0.3:
        outcome["followUp"] = {
            "conversationContinued": rng.random() < 0.7,
            "mistakeCorrected": not good and rng.random() < 0.5,
        }
    return outcome


def _alternatives(rng: random.Random, action: str, confidence: float) -> list[dict]:
    other = "SILENT" if action == "POSTED" else "POSTED"
    return [
        {
            "action": other,
            "confidence": round(1 - confidence, 2),
            "reasoning": rng.choice(REASONS[other]),
            "whyNotChosen": "Lower confidence than the chosen action.",
        }
    ]


def _decision(
    rng: random.Random, session: str, room: str, seq: int, ts: datetime, history: list[dict]
) -> dict:
    human = rng.random() < 0.3
    name = rng.choice(HUMANS) if human else rng.choice(list(PERSONAS))
    action = rng.choice(["POSTED", "SILENT"])
    reply = rng.choice(REPLIES) if action == "POSTED" else None
    decision: dict[str, Any] = {
        "action": action,
        "confidence": round(rng.uniform(0.3, 0.98), 2),
        "reasoning": rng.choice(REASONS[action]),
        "responseTime": rng.randint(300, 9000),
    }
    if reply:
        decision["responseContent"] = reply
    if not human:
        decision["modelUsed"] = rng.choice(["llama3.2:3b", "claude-3-haiku", "gpt-4o-mini"])
        if rng.random() < 0.3:
            decision["alternatives"] = _alternatives(rng, action, decision["confidence"])
    if human and rng.random() < 0.8:
        suggested = rng.choice(["POSTED", "SILENT"])
        decision["companionSuggestion"] = {
            "suggestedAction": suggested,
            "confidence": round(rng.uniform(0.4, 0.9), 2),
            "reasoning": "You were mentioned by name."
            if suggested == "POSTED"
            else "Others are handling it.",
        }
        if rng.random() < 0.7:  # older companion builds did not write wasFollowed
            decision["companionSuggestion"]["wasFollowed"] = suggested == action
        else:
            decision["companionSuggestion"]["suggestedAction"] = suggested.lower()
    prompt = f"You are {name}, a human member of #{room}." if human else PERSONAS[name]
    ts_ms = int(ts.timestamp() * 1000)
    return {
        "id": _uuid(rng),
        "timestamp": ts_ms,
        "actorId": f"{'user' if human else 'persona'}-{name.lower().replace(' ', '-')}",
        "actorType": "human" if human else "ai-persona",
        "actorName": name,
        "triggerEventId": _uuid(rng),
        "domain": "chat",
        "ragContext": {
            "identity": {"systemPrompt": prompt, "role": "member" if human else "assistant"},
            "conversationHistory": list(history[-6:]),
            "metadata": {"messageCount": len(history)},
        },
        "visualContext": {"type": "chat-ui", "activeTab": room, "scrollPosition": 0},
        "coordinationSnapshot": {
            "thoughtStreamId": _uuid(rng)[:8],
            "phase": "deciding",
            "othersConsideringCount": rng.randint(0, 3),
            "othersConsideringNames": [],
        },
        "ambientState": {
            "temperature": round(rng.random(), 2),
            "userPresent": rng.random() < 0.7,
            "timeSinceLastResponse": rng.randint(2_000, 600_000),
            "messagesInLastMinute": rng.randint(0, 6),
            "mentionedByName": rng.random() < 0.2,
        },
        "decision": decision,
        "outcome": _outcome(rng, ts_ms, good=rng.random() < 0.65),
        "metadata": {
            "sessionId": session,
            "contextId": f"room-{room}",
            "sequenceNumber": seq,
            "tags": [room],
        },
    }


def _session(rng: random.Random, start: datetime) -> list[dict]:
    session, room = _uuid(rng), rng.choice(ROOMS)
    history: list[dict] = []
    out = []
    ts = start
    for seq in range(1, rng.randint(5, 9)):
        ts += timedelta(seconds=rng.randint(5, 240))
        history.append(
            {"role": "user", "name": rng.choice(HUMANS), "content": rng.choice(USER_LINES)}
        )
        record = _decision(rng, session, room, seq, ts, history)
        if record["decision"].get("responseContent"):
            history.append(
                {
                    "role": "assistant",
                    "name": record["actorName"],
                    "content": record["decision"]["responseContent"],
                }
            )
        out.append(record)
    return out


# ---------------------------------------------------------------- SQLite


SQL_COLUMNS = {
    "id": "id",
    "timestamp": "timestamp",
    "actor_id": "actorId",
    "actor_type": "actorType",
    "actor_name": "actorName",
    "trigger_event_id": "triggerEventId",
    "domain": "domain",
    "rag_context": "ragContext",
    "visual_context": "visualContext",
    "coordination_snapshot": "coordinationSnapshot",
    "ambient_state": "ambientState",
    "decision": "decision",
    "outcome": "outcome",
    "metadata": "metadata",
}


def _json(value: Any) -> str | None:
    return None if value is None else orjson.dumps(value).decode()


def _sql_row(record: dict, rng: random.Random) -> tuple:
    rag = orjson.dumps(record["ragContext"])
    values = {col: record.get(key) for col, key in SQL_COLUMNS.items()}
    values["rag_context"] = gzip_text(rag) if rng.random() < 0.5 else rag.decode()
    for col in (
        "visual_context",
        "coordination_snapshot",
        "ambient_state",
        "decision",
        "outcome",
        "metadata",
    ):
        values[col] = _json(values[col])
    return (*values.values(), "1.4.2")


def _write_sqlite(path: Path, records: list[dict], rng: random.Random) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    cols = list(SQL_COLUMNS) + ["system_version"]  # a column the adapter does not know → extra
    conn = sqlite3.connect(path)
    try:
        conn.execute(f"CREATE TABLE coordination_decisions ({', '.join(cols)}, PRIMARY KEY (id))")
        conn.executemany(
            f"INSERT INTO coordination_decisions VALUES ({', '.join('?' * len(cols))})",
            [_sql_row(r, rng) for r in records],
        )
        conn.commit()
    finally:
        conn.close()


# ---------------------------------------------------------------- JSONL export


def _export_copy(record: dict, rng: random.Random) -> dict:
    copy = orjson.loads(orjson.dumps(record))
    if (
        copy["outcome"] is None and rng.random() < 0.5
    ):  # rated after the DB snapshot → conflict, export wins
        copy["outcome"] = {
            "wasGoodDecision": True,
            "rating": 5,
            "ratedBy": "user",
            "ratedAt": copy["timestamp"] + 7_200_000,
            "reasoning": "Rated later from the export UI.",
        }
    if rng.random() < 0.4:
        copy["ragContext"] = gzip_text(orjson.dumps(copy["ragContext"]))
    return copy


def _iso(record: dict) -> dict:
    ts = datetime.fromtimestamp(record["timestamp"] / 1000, tz=UTC)
    return {
        **record,
        "timestamp": ts.isoformat().replace("+00:00", "Z"),
        "exportedBy": "decision/export v2",
    }


def _bad_records(rng: random.Random, template: dict) -> tuple[list[tuple], list[bytes]]:
    broken_gzip = dict(template, id=_uuid(rng))
    bad_conf = orjson.loads(orjson.dumps(template))
    bad_conf["id"] = _uuid(rng)
    bad_conf["decision"]["confidence"] = "very sure"
    sql_rows = [_sql_row(broken_gzip, rng), _sql_row(bad_conf, rng)]
    cut_stream = gzip.compress(orjson.dumps(template["ragContext"]), mtime=0)[
        :-12
    ]  # no trailer, no end
    sql_rows[0] = (
        *sql_rows[0][:7],
        "gzip:" + base64.b64encode(cut_stream).decode(),
        *sql_rows[0][8:],
    )
    bomb = dict(template, id=_uuid(rng), ragContext=gzip_text(b" " * (9 * 1024 * 1024)))
    no_id = {k: v for k, v in template.items() if k != "id"}
    lines = [
        orjson.dumps(bomb),
        b'{"id": "' + _uuid(rng).encode() + b'", "decision": {"action": "POSTED",, }}',
        orjson.dumps(no_id),
    ]
    return sql_rows, lines


def write(raw_root: Path, rng: random.Random, scale: int = 1) -> None:
    base = Path(raw_root) / "decisions" / "continuum"
    start = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
    sessions = [_session(rng, start + timedelta(hours=7 * i)) for i in range(6 * scale)]
    in_db = [r for s in sessions[: 4 * scale] for r in s]
    only_export = [r for s in sessions[4 * scale :] for r in s]
    overlap = [r for r in in_db if rng.random() < 0.4]
    bad_sql, bad_lines = _bad_records(rng, in_db[0])
    _write_sqlite(base / "coordination_decisions.sqlite", in_db, rng)
    conn = sqlite3.connect(base / "coordination_decisions.sqlite")
    conn.executemany(f"INSERT INTO coordination_decisions VALUES ({', '.join('?' * 15)})", bad_sql)
    conn.commit()
    conn.close()
    exported = [_export_copy(r, rng) for r in overlap] + [
        _iso(r) if rng.random() < 0.3 else r for r in only_export
    ]
    exported += rule_cases(in_db[-1])
    lines = [orjson.dumps(r) for r in exported]
    for bad in bad_lines:
        lines.insert(rng.randrange(len(lines) + 1), bad)
    (base / "exports").mkdir(parents=True, exist_ok=True)
    (base / "exports" / "decisions-export.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    legacy = base / "legacy" / "coordination_decisions.backup.sqlite"
    legacy.parent.mkdir(parents=True, exist_ok=True)
    legacy.write_text("PRAGMA dump failed: disk full\nid|timestamp|actor_id\n", encoding="utf-8")
    _write_ratings(Path(raw_root), in_db)
    _write_replays(Path(raw_root), in_db)


def _rating_line(rng: random.Random, record: dict, rating: float, scale: str, by: str, days: int):
    rated_at = datetime.fromtimestamp(record["timestamp"] / 1000, UTC) + timedelta(days=days)
    event = {
        "event_id": _uuid(rng),
        "decision_id": record["id"],
        "rating": rating,
        "scale": scale,
        "rated_by": by,
        "rated_at": rated_at.isoformat(),
        "reason": f"{by} review after {days} days",
    }
    return orjson.dumps(event)


def _write_ratings(raw_root: Path, in_db: list[dict]) -> None:
    """`ratings/ratings.jsonl` as `turnlake decision rate` appends it: ratings over time, one
    superseding an earlier rating by the same rater kind (the source's own, for a user-rated
    decision), an unrated decision rated later, and two bad lines. Its own random stream, so the
    decision files stay as they were."""
    rng = random.Random("decision-ratings")
    unrated = next(r for r in in_db if r["outcome"] is None)
    user_rated = next(r for r in in_db if (r["outcome"] or {}).get("ratedBy") == "user")
    first = in_db[1]
    lines = [
        _rating_line(rng, first, 2, "1-5", "user", 1),
        _rating_line(rng, first, 4, "1-5", "community", 2),
        _rating_line(rng, first, 5, "1-5", "user", 3),  # supersedes the user's 2
        _rating_line(rng, unrated, 0.8, "0-1", "system", 1),
        _rating_line(rng, user_rated, 1, "1-5", "user", 5),  # supersedes the source's own rating
        _rating_line(rng, first, 9, "1-5", "user", 4),  # off its scale: quarantined
        (
            b'{"event_id": "e-orphan", "decision_id": "no-such-decision", "rating": 3, "scale": '
            b'"1-5", "rated_by": "user", "rated_at": "2025-03-10T10:00:00Z"}'
        ),
    ]
    path = raw_root / "ratings" / "ratings.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\n".join(lines) + b"\n")


def _write_replays(raw_root: Path, in_db: list[dict]) -> None:
    """Replay results of `turnlake decision replay` as they come back: an OpenAI batch output file
    for the persona `terse-critic` (one failed request) and a plain results file for `cautious`
    (one result for a decision that does not exist). Its own random stream."""
    rng = random.Random("decision-replays")
    replayed = [r for r in in_db if r["actorType"] != "human"][:8]
    batch = []
    for i, record in enumerate(replayed):
        action = record["decision"]["action"] if i % 3 else "SILENT"
        content = orjson.dumps({"action": action, "response": None}).decode()
        body = {"model": "gpt-4o-mini", "choices": [{"message": {"content": content}}]}
        batch.append(
            {
                "id": f"batch_req_{i}",
                "custom_id": record["id"],
                "response": {"status_code": 200, "request_id": _uuid(rng), "body": body},
                "error": None,
            }
        )
    batch[-1] = {**batch[-1], "response": None, "error": {"code": "rate_limit", "message": "429"}}
    plain = [
        {
            "decision_id": record["id"],
            "persona": "cautious",
            "action": "SILENT",
            "confidence": round(rng.uniform(0.5, 0.9), 2),
            "reasoning": "Prefer silence unless asked directly.",
            "response": None,
        }
        for record in replayed[:5]
    ]
    plain.append({**plain[0], "decision_id": "no-such-decision"})
    folder = raw_root / "replays"
    (folder / "terse-critic").mkdir(parents=True, exist_ok=True)
    for path, rows in (
        (folder / "terse-critic" / "batch_output.jsonl", batch),
        (folder / "cautious.jsonl", plain),
    ):
        path.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
