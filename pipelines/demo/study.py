"""Demo raw data for the wildfire persuasion study, in its real layout and with its real quirks.

Per participant: up to six sessions (non-roleplay strategies, then roleplay characters with IQL
steps), each written to its own file and/or the master JSONL and/or the participant's completed
(CCC) or exit (INC) file, so most sessions appear 2-3 times. Judge trails reach agreement,
refusal, max_turns (15 resident turns) and no event at all. Plus a few bad records, a session
whose copies disagree (duplicate_conflict) and an IQL step whose text is not the transcript's
(bad_value).
"""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from pipelines.demo import study_text as T

ROOT = "survey_responses"
MAX_RESIDENT_TURNS = 15
TRAILS = ("agreement", "refusal", "max_turns", "unknown")


def write(raw_root: Path, rng: random.Random, scale: int = 1) -> None:
    base = Path(raw_root) / ROOT
    for folder in ("conversations", "completed", "exits"):
        (base / folder).mkdir(parents=True, exist_ok=True)
    master: list[bytes] = []
    start = datetime(2025, 12, 20, 15, 0, tzinfo=UTC)
    counters = {"completed": 0, "exit": 0}
    for n in range(8 * scale):
        kind = ("completed", "completed", "exit", None)[n % 4]
        pid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        when = start + timedelta(hours=7 * n + rng.randint(0, 5))
        sessions = _participant_sessions(rng, pid, when, kind, n)
        for i, session in enumerate(sessions):
            _write_copies(
                base, rng, session, master, only_master=(kind is None and i == 0 and n % 8 == 3)
            )
        if kind is not None:
            counters[kind] += 1
            _write_participant_file(base, rng, pid, kind, counters[kind], sessions, when)
    _write_bad_records(base, rng, master, start)
    (base / "conversations" / "all_conversations.jsonl").write_bytes(b"".join(master))


# ---------------------------------------------------------------- sessions


def _participant_sessions(
    rng: random.Random, pid: str, when: datetime, kind: str | None, n: int
) -> list[dict]:
    if kind == "completed" and n % 8 == 4:
        count = 0  # a completed file with no conversations at all
    elif kind == "completed":
        count = 6 if n % 3 else 4  # and some with fewer than six
    else:
        count = rng.randint(1, 4)
    sessions = []
    for i in range(count):
        roleplay = i >= 3 or (count < 3 and i == count - 1)
        trail = TRAILS[(n + i) % len(TRAILS)]
        sessions.append(_session(rng, pid, when + timedelta(minutes=4 * i), roleplay, i, trail))
    return sessions


def _session(
    rng: random.Random, pid: str, when: datetime, roleplay: bool, i: int, trail: str
) -> dict:
    epoch = int(when.timestamp())
    if roleplay:
        character = rng.choice(T.CHARACTERS)
        session_id, strategy, scenario = (
            f"{pid}_{character}_{epoch}",
            None,
            T.ROLEPLAY_SCENARIOS.get(character),
        )
        history, iql = _roleplay_dialog(rng, when, trail)
    else:
        character, strategy = None, T.STRATEGIES[i % len(T.STRATEGIES)]
        session_id, scenario = f"{pid}_nonrole_{strategy}_{epoch}", T.NONROLE_SCENARIO
        history, iql = _scripted_dialog(rng), []
    ended = when + timedelta(seconds=20 * len(history) + rng.randint(5, 90))
    style = rng.choice(("naive", "z", "epoch"))
    return {
        "session_id": session_id,
        "participant_id": pid,
        "character": character,
        "conversation_type": "roleplay" if roleplay else "non-roleplay",
        "persuasion_strategy": strategy,
        "turn_count": sum(h["role"] == "resident" for h in history),
        "history": history,
        "iql_data": iql,
        "created_at": _stamp(when, style),
        "ended_at": _stamp(ended, style),
        "scenario": scenario,
    }


def _scripted_dialog(rng: random.Random) -> list[dict]:
    history = [{"role": "operator", "text": rng.choice(T.OPENINGS)}]
    for _ in range(5):
        history.append(
            {
                "role": "resident",
                "text": rng.choice(T.RESIDENT_LINES[rng.choice(("AGREE", "UNKNOWN", "NEUTRAL"))]),
            }
        )
        history.append(
            {"role": "operator", "text": rng.choice(T.OPERATOR_LINES[rng.choice(T.POLICIES)])}
        )
    history[-1] = {"role": "operator", "text": rng.choice(T.CLOSINGS)}
    return history


def _stances(rng: random.Random, trail: str) -> list[tuple[str, float]]:
    calm = [
        (rng.choice(("NEUTRAL", "UNKNOWN", "DELAY")), round(rng.uniform(0.4, 0.9), 2))
        for _ in range(rng.randint(0, 3))
    ]
    if trail == "agreement":
        return calm + [("AGREE", rng.choice((0.7, 0.85, 0.9, 1.0)))]
    if trail == "refusal":
        return calm + [("REFUSE", 0.8), ("REFUSE", 0.9)]
    if trail == "max_turns":
        pool = ("NEUTRAL", "DELAY", "UNKNOWN", "AGREE", "REFUSE")
        out: list[tuple[str, float]] = []
        while len(out) < MAX_RESIDENT_TURNS:
            stance = rng.choice(pool)
            if stance == "REFUSE" and out and out[-1][0] == "REFUSE":
                continue  # two in a row would end it as a refusal
            out.append((stance, round(rng.uniform(0.3, 0.65), 2) if stance == "AGREE" else 0.6))
        return out
    return calm + [("AGREE", 0.6)]  # hesitant agreement, then the participant closed the window


def _roleplay_dialog(
    rng: random.Random, when: datetime, trail: str
) -> tuple[list[dict], list[dict]]:
    history = [{"role": "operator", "text": rng.choice(T.OPENINGS)}]
    iql = []
    style = rng.choice(("naive", "z", "epoch"))
    reason_key = rng.choice(("reason", "reasoning"))
    for k, (stance, confidence) in enumerate(_stances(rng, trail), start=1):
        resident = rng.choice(T.RESIDENT_LINES[stance])
        q_values = {p: round(1.0 + rng.uniform(0.02, 0.12), 6) for p in T.POLICIES}
        policy = max(q_values, key=q_values.__getitem__)
        reply = rng.choice(T.OPERATOR_LINES[policy])
        history += [{"role": "resident", "text": resident}, {"role": "operator", "text": reply}]
        iql.append(
            {
                "turn": k,
                "resident_message": resident,
                "operator_response": reply,
                "selected_policy": policy,
                "q_values": q_values,
                "judge": {
                    "stance": stance,
                    "confidence": confidence,
                    reason_key: T.JUDGE_NOTES[stance],
                },
                "timestamp": _stamp(when + timedelta(seconds=9 * k), style),
            }
        )
    if trail == "agreement" and rng.random() < 0.7:
        # The resident's last word is answered by a closing line the IQL log never recorded.
        history += [
            {"role": "resident", "text": "okay thanks"},
            {"role": "operator", "text": rng.choice(T.CLOSINGS)},
        ]
    return history, iql


def _stamp(moment: datetime, style: str) -> Any:
    if style == "epoch":
        return round(moment.timestamp(), 6)
    text = moment.replace(tzinfo=None).isoformat(timespec="microseconds")
    return text + "Z" if style == "z" else text


# ---------------------------------------------------------------- files


def _write_copies(
    base: Path, rng: random.Random, session: dict, master: list[bytes], only_master: bool
) -> None:
    own_file = not only_master and rng.random() < 0.8
    if own_file:
        copy = dict(session)
        if rng.random() < 0.2:
            copy["participantId"] = copy.pop("participant_id")
        (base / "conversations" / f"{session['session_id']}.json").write_bytes(
            orjson.dumps(copy, option=orjson.OPT_INDENT_2)
        )
    if only_master or rng.random() < 0.8:
        copy = dict(session)
        if only_master:
            copy.pop("participant_id")  # the group comes from the session id's UUID prefix
        elif len(copy["iql_data"]) > 1 and rng.random() < 0.3:
            # An earlier "save active sessions" snapshot: shorter than the final copy.
            copy["history"], copy["iql_data"] = copy["history"][:-2], copy["iql_data"][:-1]
        master.append(orjson.dumps(copy) + b"\n")


def _write_participant_file(
    base: Path,
    rng: random.Random,
    pid: str,
    kind: str,
    number: int,
    sessions: list[dict],
    when: datetime,
) -> None:
    conversations = [{k: v for k, v in s.items() if k != "participant_id"} for s in sessions]
    done = when + timedelta(minutes=30)
    record: dict[str, Any] = {
        "confirmation_number": f"{'CCC' if kind == 'completed' else 'INC'}{number:03d}",
        "participant_id": pid,
        "status": "complete" if kind == "completed" else "incomplete",
    }
    if kind == "completed":
        record["completion_timestamp"] = done.replace(tzinfo=None).isoformat()
    else:
        record["exit_page"] = rng.choice(("unknown", "post-survey", "chat"))
        record["exit_timestamp"] = done.replace(tzinfo=None).isoformat()
    record["survey"] = _survey(rng, pid, when)
    record["post_surveys"] = [_post_survey(rng, pid, s, i, when) for i, s in enumerate(sessions)][
        : max(len(sessions) - (kind == "exit"), 0)
    ]
    record["conversations"] = conversations
    folder, name = ("completed", "CCC") if kind == "completed" else ("exits", "INC")
    (base / folder / f"{name}{number:03d}.json").write_bytes(
        orjson.dumps(record, option=orjson.OPT_INDENT_2)
    )


def _survey(rng: random.Random, pid: str, when: datetime) -> dict:
    return {
        "timestamp": when.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
        "background": {
            "email": f"participant{rng.randint(100, 999)}@example.org",
            "nickname": rng.choice(T.NICKNAMES),
            "age": str(rng.randint(19, 71)),
            "gender": rng.choice(("female", "male", "non-binary")),
            # From the id, not the generator: adding it left every other demo value unchanged.
            "education": T.EDUCATION[int(pid[:8], 16) % len(T.EDUCATION)],
            "occupation": rng.choice(T.OCCUPATIONS),
            "ideology": str(rng.randint(1, 7)),
        },
        "personality": {f"q{i}": str(rng.randint(1, 5)) for i in range(1, 11)},
        "moral": {f"q{i}": str(rng.randint(1, 5)) for i in range(1, 13)},
        "specialNeeds": {
            "condition": "no",
            "responsible": rng.choice(("yes", "no")),
            "vehicle": "no",
            "details": "",
        },
        "participantId": pid,
    }


def _post_survey(rng: random.Random, pid: str, session: dict, i: int, when: datetime) -> dict:
    willing = rng.choice(("yes", "yes", "no"))
    return {
        "sessionId": session["session_id"],
        "participantId": pid,
        "character": session["character"] or "self",
        "conversationNumber": i + 1 if i % 2 else str(i + 1),
        "timestamp": (when + timedelta(minutes=4 * i + 3)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")[:-4]
        + "Z",
        "willing": willing,
        "willingYesDetails": "The dispatcher gave me a clear route." if willing == "yes" else "",
        "willingNoDetails": "" if willing == "yes" else "I would wait to see the flames myself.",
        "naturalness": rng.choice(T.NATURALNESS),
        "unnaturalUtterances": rng.choice(([], [3], [3, 9])),
    }


def _write_bad_records(
    base: Path, rng: random.Random, master: list[bytes], start: datetime
) -> None:
    pid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    good = _session(rng, pid, start, True, 3, "refusal")
    master.append(orjson.dumps(good) + b"\n")
    whole = orjson.dumps(good, option=orjson.OPT_INDENT_2)
    conv = base / "conversations"
    # Truncated own file (the writer died); the master copy above is complete.
    (conv / f"{good['session_id']}.json").write_bytes(whole[: len(whole) * 3 // 5])
    bad_ts = dict(
        _session(rng, pid, start + timedelta(minutes=9), False, 1, "unknown"),
        created_at="yesterday afternoon",
    )
    (conv / f"{bad_ts['session_id']}.json").write_bytes(
        orjson.dumps(bad_ts, option=orjson.OPT_INDENT_2)
    )
    no_id = {
        k: v for k, v in _session(rng, pid, start, False, 0, "unknown").items() if k != "session_id"
    }
    list_q = _session(rng, pid, start + timedelta(minutes=20), True, 4, "agreement")
    list_q["iql_data"][0]["q_values"] = list(list_q["iql_data"][0]["q_values"].values())
    text_history = dict(_session(rng, pid, start, False, 2, "unknown"), history="operator: hello?")
    master.insert(
        len(master) // 2, b'{"session_id": "' + pid.encode() + b'_nonrole_x_1", "history": [}\n'
    )
    master += [orjson.dumps(r) + b"\n" for r in (no_id, list_q, text_history)]
    # The master copy of a session says something else at history[1] than its own file:
    # duplicate_conflict.
    edited = _session(rng, pid, start + timedelta(minutes=30), True, 5, "agreement")
    (conv / f"{edited['session_id']}.json").write_bytes(
        orjson.dumps(edited, option=orjson.OPT_INDENT_2)
    )
    master.append(
        orjson.dumps(
            {
                **edited,
                "history": [
                    edited["history"][0],
                    {"role": "resident", "text": "Who is calling?"},
                    *edited["history"][2:],
                ],
            }
        )
        + b"\n"
    )
    # The IQL log kept a resident message the transcript does not have: that step is quarantined
    # (bad_value).
    drifted = _session(rng, pid, start + timedelta(minutes=40), True, 5, "refusal")
    drifted["iql_data"][-1] = {
        **drifted["iql_data"][-1],
        "resident_message": "I will think about it.",
    }
    master.append(orjson.dumps(drifted) + b"\n")
