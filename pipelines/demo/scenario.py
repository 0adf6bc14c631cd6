"""Demo raw data for the `scenario` source: moderator–user scenario-planning dialogs.

Writes `scenarios/<state>/SCENARIO-YYYY-NNN/moderator_dialog.jsonl` with every real-world
variation of DESIGN §1 (plain-string messages, pretty-printed concatenated objects,
`user_message`, `type`, undocumented interaction types, text cut at 1000 bytes inside a UTF-8
character, BOM, blank lines, an active file with a half-written last entry, a scenario copied
into two state folders) and a few bad records of each kind. Deterministic for a given `rng` seed;
size grows linearly with `scale`.

Entries carry the seed's signals (checkpoint_timing, question_quality, user_engagement_level,
feedback_specificity, engagement_indicators, synthesis_length_words, validated_output,
new_strategic_context), some in `quality_signals`, some in the reply's `signals` or in `outcome`,
as real logs scatter them; decisions use the varied wording real users type
(`proceed_without_reround`, `proceed_with_reround`, `accept`, ...). A corrected checkpoint that
the user sends back for a re-round is followed by the moderator's revised answer to the same
checkpoint (same phase and checkpoint_number): the material of correction preference pairs. The
first revision of every sixth scenario is itself judged worse than the answer it replaces, so a
release must drop that pair.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

COMPANIES = [
    "a cold-chain logistics firm",
    "a regional water utility",
    "a mid-size chip packager",
    "an organic dairy cooperative",
    "a hospital group",
    "a wind-turbine service company",
    "a container-port operator",
    "a specialty-coffee importer",
]
SPECIALISTS = [
    "economist",
    "geopolitician",
    "ecologist",
    "demographer",
    "technologist",
    "regulatory analyst",
    "labour-market specialist",
    "climate scientist",
]
FINDINGS = [
    "input costs stay volatile until at least 2027",
    "export controls on key components tighten",
    "the workforce shrinks by about 6% as retirements peak",
    "drought years double in frequency",
    "carbon pricing reaches the transport sector",
    "two competitors merge within eighteen months",
    "interest rates stay high for longer than planned",
    "grid congestion delays new sites",
]
USER_CORRECTIONS = [
    "Actually, our revenue is {n}M, not {m}M.",
    "That's wrong: we already left the {s} market.",
    "Not quite, the contract with our main supplier runs until 2029.",
    "However, we are in acquisition talks, please factor that in.",
]
USER_OK = [
    "Looks good, proceed.",
    "Yes, that matches what we see.",
    "Great, no additions.",
    "ok",
    "Fine by me, move on.",
    "Approved.",
    "This is actually great, proceed.",
    "No corrections, nothing wrong there.",
]
# Decision wording by meaning, as users type it.
WORDING = {
    "re-round": ["re-round", "proceed_with_reround", "accept"],
    "proceed": ["proceed", "proceed_without_reround", "accept"],
}
OVERRIDE = {
    "re-round": ["proceed_without_reround", "proceed"],
    "proceed": ["re-round", "proceed_with_reround"],
}
TIMING = ["well_timed", "well_timed", "too_early", "too_late"]
LEVELS = ["high", "medium", "low"]
SPECIFICITY = ["specific", "general", "vague"]
TONES = ["collaborative", "directive", "neutral"]
USER_QUESTIONS = [
    "Why is the {s} only in phase 3?",
    "How did the {s} arrive at that number?",
    "Can you explain what a predetermined element is?",
]
DOCUMENTED = [
    "checkpoint",
    "validation_request",
    "clarification",
    "user_question",
    "specialist_selection",
    "phase_transition",
    "feedback",
    "error_recovery",
]
UNDOCUMENTED = ["user_input", "user_correction", "user_validation"]
STATES = ["completed", "archived", "active", "completed", "paused"]
# Scenarios start every 3 days, wrapping after 20 years: a big corpus must stay in the years the
# adapter accepts (up to 2100), or most of it would be quarantined as bad timestamps.
DAYS_WRAP = 20 * 365


def scenario_day(i: int) -> int:
    """Days after the first scenario's start on which scenario `i` starts."""
    return (i * 3) % DAYS_WRAP


def write(raw_root: Path, rng: random.Random, scale: int = 1) -> None:
    base = Path(raw_root) / "scenarios"
    start = datetime(2025, 9, 1, 8, 0, tzinfo=UTC)
    n = 12 * max(scale, 1)
    for i in range(n):
        sid = f"SCENARIO-2025-{i + 1:03d}"
        state = "active" if i % 6 == 2 else STATES[i % len(STATES)]
        entries = []
        for m in range(rng.randint(4, 9)):
            ts = start + timedelta(days=scenario_day(i), minutes=m * 17)
            entries.append(_entry(rng, sid, ts, m, i))
            if _sent_back(entries[-1]):
                entries.append(
                    _revision(
                        rng, entries[-1], ts + timedelta(minutes=8), worse=i % 6 == 4 and m == 1
                    )
                )
        records = entries + ([_metadata(rng, sid, len(entries), i)] if state == "completed" else [])
        pretty = i % 3 == 1
        text = _encode(records, pretty, bom=i % 4 == 0, blank_lines=i % 2 == 0)
        if i % 6 == 2:  # an active file: the logger is still writing the last entry
            text += (
                b'{"timestamp": "2025-12-01T10:00:00Z", "interaction_type": "checkpoint", '
                b'"moderator_message": "Round 2 of ph'
            )
        _put(base / state / sid, text)
        if (
            i % 6 == 3 and state != "active"
        ):  # a finished scenario whose active copy was left behind
            _put(base / "active" / sid, _encode(entries[:-1], pretty, bom=False, blank_lines=False))
    _write_bad(base, start)


def _entry(rng: random.Random, sid: str, ts: datetime, m: int, i: int) -> dict:
    # A few fixed positions guarantee every variation appears even at scale 1.
    kind = {1: "checkpoint", 2: rng.choice(UNDOCUMENTED), 3: "user_question"}.get(
        m, rng.choice(DOCUMENTED + UNDOCUMENTED)
    )
    specialist, finding = rng.choice(SPECIALISTS), rng.choice(FINDINGS)
    moderator = (
        f"Round {m + 1} complete for {rng.choice(COMPANIES)}. The {specialist} expects that "
        f"{finding}. Any corrections, or new context this triggers?"
    )
    # Scenarios with object messages correct their first checkpoint and send it back for a re-round.
    forced = m == 1 and i % 3 == 1
    correcting = (
        forced or (kind == "user_correction") or (kind != "user_validation" and rng.random() < 0.35)
    )
    user = (
        rng.choice(USER_CORRECTIONS).format(
            n=rng.randint(300, 990), m=rng.randint(300, 990), s=specialist
        )
        if correcting
        else rng.choice(USER_OK)
    )
    if kind == "user_question":
        return _question_entry(rng, sid, ts, specialist, finding)
    if kind in UNDOCUMENTED:  # hook-logged user prompt: no moderator message
        return {
            "user_message": {"content": user, "message_type": kind},
            "outcome": {"interaction_captured": True},
            "timestamp": _iso(ts),
            "scenario_id": sid,
            "interaction_type": kind,
        }
    if m == 1 and i % 2 == 0:  # text cut at 1000 bytes by the logger, splitting a UTF-8 character
        moderator = moderator + " Détails: " + "économie régionale, coûts énergétiques; " * 40
    turn = _Turn(kind, specialist, moderator, user, correcting, forced)
    return _checkpoint_entry(rng, sid, ts, m, i, turn)


@dataclass(frozen=True)
class _Turn:
    """What a checkpoint entry says, drawn before its details."""

    kind: str
    specialist: str
    moderator: str
    user: str
    correcting: bool
    forced: bool


def _question_entry(
    rng: random.Random, sid: str, ts: datetime, specialist: str, finding: str
) -> dict:
    return {
        "timestamp": _iso(ts),
        "interaction_type": "user_question",
        "scenario_id": sid,
        "user_message": {
            "content": rng.choice(USER_QUESTIONS).format(s=specialist),
            "message_type": "question",
        },
        "moderator_response": {
            "content": f"Because the {specialist} frames {finding} as a driving force.",
            "response_type": "clarification",
        },
        "outcome": {
            "question_resolved": True,
            "user_satisfaction_score": round(rng.uniform(0.5, 1), 2),
        },
    }


def _user_decision(rng: random.Random, turn: _Turn) -> tuple[str, str]:
    """The moderator's proposal and the user's decision, followed or overridden."""
    proposal = "re-round" if turn.correcting else "proceed"
    followed = turn.forced or rng.random() < 0.7
    wording = (
        ["re-round", "proceed_with_reround"]
        if turn.forced
        else (WORDING if followed else OVERRIDE)[proposal]
    )
    return proposal, rng.choice(wording)


def _judgements(rng: random.Random, turn: _Turn, decision: str, i: int) -> tuple[dict, dict, dict]:
    """The entry's signals, quality signals and outcome (other loggers write some elsewhere)."""
    correcting = turn.correcting
    new_context = rng.random() < 0.3
    signals = {
        "provided_correction": correcting,
        "correction_magnitude": rng.choice(["minor", "moderate", "major"]) if correcting else None,
        "new_strategic_context": new_context,
        "expressed_satisfaction": not correcting and rng.random() < 0.6,
    }
    quality = {
        "user_engagement_level": rng.choice(LEVELS),
        "moderator_effectiveness": rng.choice(["excellent", "good", "fair", "poor"]),
        "decision_confidence": rng.choice(["high", "medium", "low"]),
        "checkpoint_timing": rng.choice(TIMING),
        "question_quality": rng.choice(LEVELS),
        "feedback_specificity": rng.choice(SPECIFICITY),
    }
    outcome = {
        "checkpoint_successful": not correcting or rng.random() < 0.5,
        "feedback_captured": True,
        "user_validated": not correcting,
        "iteration_triggered": decision in ("re-round", "proceed_with_reround"),
        "user_satisfaction_score": round(rng.uniform(0.3, 1), 2),
    }
    if i % 2:  # other loggers write some signals elsewhere: accepted wherever they are
        signals["feedback_specificity"] = quality.pop("feedback_specificity")
        outcome["checkpoint_timing"] = quality.pop("checkpoint_timing")
        signals["validated_output"] = not correcting
    quality["engagement_indicators"] = (
        ["asked_follow_up", "added_context"][: rng.randint(0, 2)]
        if i % 2 == 0
        else {"follow_up_questions": rng.randint(0, 3), "reply_words": len(turn.user.split())}
    )
    return signals, quality, outcome


def _checkpoint_entry(
    rng: random.Random, sid: str, ts: datetime, m: int, i: int, turn: _Turn
) -> dict:
    proposal, decision = _user_decision(rng, turn)
    signals, quality, outcome = _judgements(rng, turn, decision, i)
    correcting, specialist = turn.correcting, turn.specialist
    entry = {
        "timestamp": _iso(ts),
        "scenario_id": sid,
        "phase": f"phase_{1 + m // 2}",
        "round": m % 3,
        "context": {
            "specialists_consulted": rng.sample(SPECIALISTS, 3),
            "files_created": [f"conversations/{specialist.replace(' ', '_')}_round{m + 1}.md"],
            "synthesis_length_words": rng.randint(80, 900),
            "checkpoint_number": m + 1,
        },
        "moderator_message": {
            "content": turn.moderator,
            "message_type": f"{turn.kind}_prompt",
            "prompt_structure": {
                "synthesis_provided": rng.random() < 0.8,
                "questions_asked": rng.randint(1, 4),
                "tone": rng.choice(TONES),
            },
        },
        "user_response": {
            "content": turn.user,
            "response_type": "correction" if correcting else "approval",
            "signals": signals,
        },
        "moderator_action": {
            "action_taken": "evaluate_and_query" if correcting else "acknowledge",
            "significance_evaluation": "major" if correcting else "minor",
            "proposed_action": proposal,
        },
        "user_decision": {"decision": decision, "decision_time_seconds": rng.randint(3, 90)},
        "outcome": outcome,
        "quality_signals": quality,
    }
    entry["interaction_type" if i % 2 else "type"] = turn.kind
    if i % 3 == 0:  # plain-string messages, `user_message` spelling
        entry["moderator_message"] = turn.moderator
        entry["user_message"] = entry.pop("user_response")["content"]
    return entry


def _sent_back(entry: dict) -> bool:
    """A corrected checkpoint the user decided to re-round."""
    decision = (entry.get("user_decision") or {}).get("decision")
    return (
        isinstance(entry.get("user_response"), dict)
        and decision in ("re-round", "proceed_with_reround")
        and entry["user_response"]["signals"]["provided_correction"]
    )


def _revision(rng: random.Random, original: dict, ts: datetime, *, worse: bool) -> dict:
    """The moderator's revised answer to the same checkpoint (same phase, checkpoint_number and
    type)."""
    entry = json.loads(json.dumps(original))
    number = entry["context"]["checkpoint_number"]
    finding = rng.choice(FINDINGS)
    entry["timestamp"] = _iso(ts)
    entry["context"]["synthesis_length_words"] = rng.randint(80, 900)
    entry["moderator_message"]["content"] = (
        f"Revised round for checkpoint {number}: the specialists re-ran it with your correction. "
        f"They now expect that {finding}. Does this version hold?"
    )
    validated = not worse
    reply = rng.choice(USER_OK) if validated else "Still wrong: you kept the old figures."
    entry["user_response"] = {
        "content": reply,
        "response_type": "approval" if validated else "correction",
        "signals": {
            "provided_correction": not validated,
            "correction_magnitude": None if validated else "major",
            "new_strategic_context": False,
            "expressed_satisfaction": validated,
        },
    }
    entry["moderator_action"] = {
        "action_taken": "acknowledge",
        "significance_evaluation": "minor",
        "proposed_action": "proceed",
    }
    entry["user_decision"] = {
        "decision": rng.choice(WORDING["proceed"]),
        "decision_time_seconds": rng.randint(3, 40),
    }
    entry["outcome"] = {
        "checkpoint_successful": validated,
        "feedback_captured": True,
        "user_validated": validated,
        "iteration_triggered": False,
        "user_satisfaction_score": round(rng.uniform(0.7, 1) if validated else 0.05, 2),
    }
    entry["quality_signals"]["moderator_effectiveness"] = (
        rng.choice(["excellent", "good"]) if validated else "poor"
    )
    return entry


def _metadata(rng: random.Random, sid: str, n: int, i: int) -> dict:
    meta = {
        "total_phases": 6,
        "total_checkpoints": n,
        "total_specialist_consultations": n * 3,
        "completion_time_hours": f"{rng.uniform(2, 6):.1f}",
        "user_satisfaction_overall": f"{rng.uniform(0.5, 1):.2f}",
        "scenario_successful": i % 4 != 3,
    }
    return {
        "scenario_metadata": meta,
        "timestamp": "2025-12-20T18:00:00Z",
        "scenario_id": sid,
        "interaction_type": "scenario_completion",
    }


def _encode(records: list[dict], pretty: bool, *, bom: bool, blank_lines: bool) -> bytes:
    lines = []
    for record in records:
        data = json.dumps(record, indent=2 if pretty else None, ensure_ascii=False).encode()
        lines.append(_cut_long_content(data))
        if blank_lines:
            lines.append(b"")
    return (b"\xef\xbb\xbf" if bom else b"") + b"\n".join(lines) + b"\n"


def _cut_long_content(data: bytes) -> bytes:
    """Cut any content longer than 1000 bytes mid-character, as the `head -c 1000` logger does."""
    marker = b'"content": "'
    start = data.find(marker)
    while start != -1:
        body = start + len(marker)
        end = data.find(b'"', body)
        if end - body > 1000:
            cut = data[body : body + 1000]
            lead = max(cut.rfind(bytes([b])) for b in range(0xC0, 0xF5))
            # End on the lead byte of a multi-byte character: the split the real logger leaves.
            data = data[:body] + (cut[: lead + 1] if lead > 0 else cut) + data[end:]
        start = data.find(marker, body)
    return data


def _write_bad(base: Path, start: datetime) -> None:
    sid = "SCENARIO-2025-900"
    good = {
        "timestamp": _iso(start),
        "scenario_id": sid,
        "interaction_type": "checkpoint",
        "moderator_message": "Round 1 complete: the economist sees rates staying high. "
        "Corrections?",
        "user_response": "None, proceed.",
        "outcome": {"user_validated": True},
    }
    lines = [
        json.dumps(good),
        (
            '{"timestamp": "2025-09-01T08:10:00Z", "interaction_type": "checkpoint" '
            '"moderator_message": "Round 2"}'
        ),
        json.dumps(["2025-09-01T08:12:00Z", "checkpoint", "Round 2 synthesis", "ok"]),
        json.dumps(
            {
                "interaction_type": "feedback",
                "moderator_message": "How is the pace?",
                "user_response": "Slow.",
            }
        ),
        json.dumps({**good, "timestamp": "2025-09-01T08:20:00Z", "moderator_message": 42}),
        json.dumps({**good, "timestamp": "1899-12-31T23:59:59Z"}),
        json.dumps(
            {
                **good,
                "timestamp": "2025-09-01T08:30:00Z",
                "outcome": {"user_satisfaction_score": "very happy"},
            }
        ),
        json.dumps(
            {**good, "timestamp": "2025-09-01T08:35:00Z", "outcome": {"user_validated": "yes"}}
        ),
        json.dumps({**good, "timestamp": "2025-09-01T08:40:00Z", "round": -2}),
        (
            '{"timestamp": "2025-09-01T08:50:00Z", "interaction_type": "checkpoint", '
            '"moderator_message": "Round 3 is'
        ),
    ]
    _put(base / "archived" / sid, "\n".join(lines).encode())


def _put(folder: Path, data: bytes) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "moderator_dialog.jsonl").write_bytes(data)


def _iso(ts: datetime) -> str:
    return ts.strftime("%Y-%m-%dT%H:%M:%SZ")
