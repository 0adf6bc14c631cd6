"""Demo `policy_state.json` documents of the social_rl source, in both shapes.

Deterministic (no random stream): the demo's other files stay the same whether or not policy
states are written.
"""

from __future__ import annotations


def _role(agent: str) -> str:
    return agent.split("+")[0] if "+" in agent else "Citizen"


def documented_policy_state(
    cast: tuple[str, ...], framework: str, option: str, prar_run: str
) -> dict:
    """The documented shape (SOCIAL_RL_SCHEMA.md): cue states per role. Deterministic, no rng:
    the demo's other files stay the same whether or not policy states are written."""
    policies = [
        {
            "role": role,
            "cues_active": ["emphasize_non_domination"],
            "cue_states": {
                "emphasize_non_domination": {
                    "cue_id": "emphasize_non_domination",
                    "active": True,
                    "intensity": 0.65,
                    "last_triggered": "2025-11-23T17:58:25",
                },
                "reflect_on_alienation": {"active": False, "intensity": 0.3},
            },
            "feedback_snapshot": {"engagement": 0.7, "alignment": 0.4},
        }
        for role in sorted({_role(a) for a in cast})
    ]
    return {
        "framework_option": option,
        "framework_name": framework,
        "policies": policies,
        "timestamp": "2025-11-23T18:20:00",
        "source_run_id": prar_run,
        "social_rl_version": "0.2.0",
    }


def per_role_policy_state(cast: tuple[str, ...]) -> dict:
    """The per-role shape the real runner's ProcessRetriever saves."""
    cue = {"mode": "observe", "text": "Notice the directive you've received.", "intensity": 0.3}
    grounded = {
        "mode": "connect",
        "text": "What does compliance mean here?",
        "intensity": 0.7,
        "grounding": "Non-domination requires understanding power dynamics",
    }
    state = {
        role: {"name": f"{role.lower()}_baseline", "cues": [cue | {"grounding": ""}, grounded]}
        | ({"thresholds": {"engagement": 0.3}} if role == "Worker" else {"thresholds": {}})
        for role in sorted({_role(a) for a in cast})
    }
    state["challenge_activation"] = {
        "name": "challenge_activation",
        "cues": [{"mode": "challenge", "text": "Does your voice matter?", "intensity": 0.7}],
        "thresholds": {"engagement": 0.3},
    }
    return state
