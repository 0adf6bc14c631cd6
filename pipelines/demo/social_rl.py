"""Demo raw data for `social_rl`: several runs covering every real-world variation, plus bad files.

Layout: `outputs/<run_dir>/round<N>_social_rl.json` (+ optional meta.json, metrics.json,
policy_state.json in both shapes, a run report attachment) and `prar/outputs/<run>/state.json`.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from pipelines.demo.social_rl_policies import documented_policy_state, per_role_policy_state

FRAMEWORKS = {
    "A": ("Class Conflict / Alienation", ("Alienation", "Non-domination")),
    "C": ("Civic Engagement / Deliberation", ("Deliberation", "Recognition")),
}
FACTORY_CAST = ("Worker+Alice", "Worker+Ben", "Owner+Marta")
CES_CAST = ("CES_Urban_Progressive", "CES_Rural_Conservative", "CES_Suburban_Moderate")
LINES = {
    "Worker": (
        "I suppose it\u2019s part of the job, but nobody asked us about the new quotas.",
        "Could we talk about the schedule before it\u2019s fixed for the month?",
        "Ben and I covered the extra shift again; that should count for something.",
        "If the line speeds up again, someone is going to get hurt.",
    ),
    "Owner": (
        "The targets stay as they are. Orders are up and the line has to keep pace.",
        "I hear you, Alice, but the schedule is not up for discussion this week.",
        "Good work on the widgets. Keep the same pace tomorrow.",
    ),
    "CES": (
        "Buses first: half my street does not own a car.",
        "The county road is falling apart and nobody in the city notices.",
        "Could we fund both if the parking fees went up a little?",
        "People out here drive forty minutes to see a doctor; roads are not optional.",
    ),
}
COACH_NOTES = (
    "Stay in character and refer to the budget figures.",
    "Answer the previous speaker directly.",
)
CUES = (
    "[REFLECT] How does this task connect to your broader situation?",
    "[CONNECT] Your response embodies your position in this structure.",
    "[OBSERVE] Notice the directive you've received.",
)


def write(raw_root: Path, rng: random.Random, scale: int = 1) -> None:
    """Write ~6 runs per scale unit (2-3 rounds each) and one folder of bad files per scale unit."""
    for i in range(scale):
        stamp = f"2025-11-{20 + i % 9:02d}_{10 + i % 12:02d}{rng.randrange(60):02d}00"
        _write_run(
            raw_root,
            rng,
            f"social_rl_{stamp}",
            "A",
            FACTORY_CAST,
            meta="sibling",
            adaptations="deltas",
            prar=True,
        )
        _write_run(
            raw_root,
            rng,
            f"ces_run_{i:03d}",
            "C",
            CES_CAST,
            meta="inline",
            adaptations="documented",
            coach=True,
        )
        _write_run(
            raw_root,
            rng,
            f"social_rl_{stamp}_nometa",
            "A",
            FACTORY_CAST,
            meta=None,
            adaptations="deltas",
        )
        _write_run(
            raw_root,
            rng,
            f"early_mock_{i:03d}",
            "A",
            FACTORY_CAST,
            meta="sibling_unversioned",
            adaptations=None,
        )
        _write_run(
            raw_root,
            rng,
            f"ces_run_{i:03d}_b",
            "C",
            CES_CAST,
            meta="sibling",
            adaptations="documented",
            coach=True,
        )
        _write_run(
            raw_root,
            rng,
            f"mixed_{i:03d}",
            "C",
            CES_CAST,
            meta="inline_unversioned",
            adaptations="deltas",
        )
        _write_bad_files(raw_root, rng, f"broken_run_{i:03d}")


def _write_run(
    root: Path,
    rng: random.Random,
    run_dir: str,
    option: str,
    cast: tuple[str, ...],
    *,
    meta: str | None,
    adaptations: str | None,
    coach: bool = False,
    prar: bool = False,
) -> None:
    folder = root / "outputs" / run_dir
    n_rounds = rng.randint(2, 3)
    t = 1_763_900_000.0 + rng.randrange(3_000_000)
    prar_run = f"{run_dir}_prar"
    meta_block = _meta(rng, run_dir, option, prar_run, versioned=meta in ("sibling", "inline"))
    previous: dict[str, dict] = {}
    for n in range(1, n_rounds + 1):
        messages, t = _messages(rng, cast, n, t, coach)
        feedback = {a: _vector(rng, a, n, option) for a in cast}
        doc: dict = {
            "round_number": n,
            "messages": messages,
            "feedback": feedback,
            "policy_adaptations": _adaptations(rng, adaptations, feedback, previous, n),
            "synthesis": ""
            if rng.random() < 0.6
            else "The group split over who decides the schedule.",
            "duration_seconds": rng.uniform(5, 140),
        }
        if meta and meta.startswith("inline"):
            doc = {"meta": meta_block, **doc}
        previous = feedback
        _dump(folder / f"round{n}_social_rl.json", doc, final_newline=rng.random() < 0.5)
    if meta and meta.startswith("sibling"):
        _dump(folder / "meta.json", meta_block | {"rounds_executed": n_rounds}, final_newline=True)
        _dump(
            folder / "metrics.json",
            {
                "per_round": {
                    f"round_{n}": {"participation": {"total_messages": len(cast) * 3}}
                    for n in range(1, n_rounds + 1)
                }
            },
            final_newline=False,
        )
    if adaptations == "documented":
        _dump(
            folder / "policy_state.json",
            documented_policy_state(cast, FRAMEWORKS[option][0], option, prar_run),
        )
    if prar:
        _dump(folder / "policy_state.json", per_role_policy_state(cast), final_newline=False)
        _text(folder / "social_rl_report.txt", f"SOCIAL RL SIMULATION REPORT\nRounds: {n_rounds}\n")
        state = {
            "current_step": rng.choice(("2.1", "3.3")),
            "student_state": {"framework_option": option},
            "canvas": {"agents": [{"identifier": a} for a in cast]},
        }
        _dump(root / "prar" / "outputs" / prar_run / "state.json", state, final_newline=True)


def _meta(rng: random.Random, run_dir: str, option: str, prar_run: str, versioned: bool) -> dict:
    meta = {
        # not the folder name
        "experiment_id": f"{run_dir.split('_')[0]}_exp_{rng.randrange(1000):03d}",
        "framework": FRAMEWORKS[option][0],
        "framework_option": option,
        "model": rng.choice(("Qwen/Qwen2.5-7B-Instruct", "mock-llm")),
        "performer_temperature": 0.7,
        "coach_temperature": 0.1,
        "prar_state_file": f"prar/outputs/{prar_run}/state.json",
        "timestamp": "2025-11-23T18:11:59.807490",
    }
    return meta | {"social_rl_version": "0.2.0"} if versioned else meta


def _messages(
    rng: random.Random, cast: tuple[str, ...], n: int, t: float, coach: bool
) -> tuple[list, float]:
    messages = []
    for turn in range(1, 3 * len(cast) + 1):
        agent = cast[(turn - 1) % len(cast)]
        kind = "CES" if agent.startswith("CES") else agent.split("+")[0]
        t += rng.uniform(3, 25)
        messages.append(
            {
                "agent_id": agent,
                "content": rng.choice(LINES[kind]),
                "round_number": n,
                "turn_number": turn,
                "timestamp": t,
                "prar_cue_used": "\n".join(rng.sample(CUES, 2)),
                "feedback_snapshot": None,
                "validation_metadata": {"attempts": rng.randint(1, 3), "filtered": False},
            }
        )
        if coach and rng.random() < 0.25:
            messages.append(
                {
                    "agent_id": "Coach",
                    "content": rng.choice(COACH_NOTES),
                    "round_number": n,
                    "turn_number": turn,
                    "timestamp": t + 0.5,
                    "internal": True,
                    "role": "system",
                }
            )
    return messages, t


def _vector(rng: random.Random, agent: str, n: int, option: str) -> dict:
    tenths = [rng.randint(0, 10) for _ in range(3)]
    return {
        "agent_id": agent,
        "round_number": n,
        # sums of tenths reproduce the float noise of the real files (0.1 * 3 = 0.30000000000000004)
        "engagement": sum([0.1] * tenths[0]),
        "theoretical_alignment": sum([0.1] * tenths[1]),
        "contribution_value": tenths[2] / 11,
        "direct_references": rng.randint(0, 6),
        "response_received": rng.randint(0, 6),
        "concepts_embodied": rng.sample(FRAMEWORKS[option][1], rng.randint(0, 2)),
        "analyst_mentions": 0,
        "synthesis_inclusion": 0.0,
    }


def _adaptations(
    rng: random.Random, shape: str | None, feedback: dict, previous: dict, n: int
) -> list:
    if shape is None or not previous:
        return []
    if shape == "deltas":
        return [
            {
                "agent_id": a,
                "role": a.split("+")[0] if "+" in a else "Citizen",
                "deltas": {
                    "engagement_delta": v["engagement"] - previous[a]["engagement"],
                    "alignment_delta": v["theoretical_alignment"]
                    - previous[a]["theoretical_alignment"],
                    "contribution_delta": v["contribution_value"]
                    - previous[a]["contribution_value"],
                },
                "round": n,
            }
            for a, v in feedback.items()
        ]
    low = [a for a, v in feedback.items() if v["theoretical_alignment"] < 0.5]
    return [
        {
            "agent_id": a,
            "adaptation_type": rng.choice(("activate_cue", "adjust_intensity")),
            "cue": "emphasize_non_domination",
            "reason": "alignment below threshold",
            "round_number": n,
            "feedback_trigger": {"alignment": feedback[a]["theoretical_alignment"]},
        }
        for a in low
    ]


def _write_bad_files(root: Path, rng: random.Random, run_dir: str) -> None:
    folder = root / "outputs" / run_dir
    good = {
        "round_number": 1,
        "messages": [
            {
                "agent_id": "Worker+Alice",
                "content": rng.choice(LINES["Worker"]),
                "round_number": 1,
                "turn_number": 1,
                "timestamp": 1763939318.85,
            }
        ],
        "feedback": {},
        "policy_adaptations": [],
        "synthesis": "",
        "duration_seconds": 2.0,
    }
    text = json.dumps(good, indent=2)
    _text(
        folder / "round1_social_rl.json", text.replace('"synthesis": ""', '"synthesis": "",,')
    )  # invalid JSON
    _text(
        folder / "round2_social_rl.json",
        text.replace('"round_number": 1', '"round_number": 2')[:150],
    )  # truncated
    _dump(
        folder / "round3_social_rl.json",
        good | {"round_number": 3, "feedback": [{"agent_id": "Worker+Alice"}]},
    )
    _dump(folder / "round4_social_rl.json", good | {"round_number": "two"})
    _dump(
        folder / "round5_social_rl.json",
        {k: v for k, v in good.items() if k != "messages"} | {"round_number": 5},
    )
    out_of_range = {"Worker+Alice": {"agent_id": "Worker+Alice", "engagement": 1.7}}
    _dump(
        folder / "round6_social_rl.json", good | {"round_number": 6, "feedback": out_of_range}
    )  # bad value


def _dump(path: Path, doc: dict, final_newline: bool = True) -> None:
    # ensure_ascii: the real writer escapes non-ASCII characters as \u2019.
    _text(path, json.dumps(doc, indent=2, ensure_ascii=True) + ("\n" if final_newline else ""))


def _text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
