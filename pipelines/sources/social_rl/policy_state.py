"""`outputs/<run_dir>/policy_state.json` → one bronze row holding one cue row per role × cue.

Two shapes are written by the Social RL code:

- documented (SOCIAL_RL_SCHEMA.md, "PRAR Policy State"): `{framework_option, framework_name,
  policies[{role, cues_active[], cue_states{cue_id: {cue_id, active, intensity, last_triggered}},
  feedback_snapshot}], timestamp, source_run_id, social_rl_version}`;
- per role (what `ProcessRetriever.save_policy_state` writes): `{<policy key>: {name,
  cues[{mode, text, intensity, grounding}], thresholds{signal: value}}}`. The key is a role
  (`Worker`) or an extra policy (`challenge_activation`); a cue has no id, so its mode names it,
  and whether it is active is not recorded (it depends on the feedback at the time of use).
"""

from __future__ import annotations

from typing import Any

import orjson

from pipelines.sources.base import RecordError
from pipelines.sources.social_rl.fields import (
    json_text,
    located,
    opt_bool,
    opt_dict,
    opt_score,
    opt_str,
)
from pipelines.sources.values import expect_type, parse_ts, unknown_fields

DOCUMENTED_FIELDS = frozenset(
    {
        "framework_option",
        "framework_name",
        "policies",
        "timestamp",
        "source_run_id",
        "social_rl_version",
    }
)
POLICY_FIELDS = frozenset({"role", "cues_active", "cue_states", "feedback_snapshot"})
CUE_STATE_FIELDS = frozenset({"cue_id", "active", "intensity", "last_triggered"})
PER_ROLE_FIELDS = frozenset({"name", "cues", "thresholds"})
PER_ROLE_CUE_FIELDS = frozenset({"mode", "text", "intensity", "grounding"})


def policy_state_row(doc: Any, run_dir: str, tz: str) -> dict:
    expect_type(doc, dict, "policy state document")
    documented = "policies" in doc
    row = _documented(doc, tz) if documented else _per_role(doc)
    return {"run_dir": run_dir, "shape": "documented" if documented else "per_role"} | row


def _cue(role: str, **fields: Any) -> dict:
    """One cue row; the fields a shape does not have stay null."""
    names = ("policy_name", "cue_index", "cue_id", "mode", "text", "active", "intensity")
    names += ("grounding", "last_triggered", "thresholds", "feedback_snapshot", "extra")
    return {"role": role} | {name: fields.get(name) for name in names}


# ---------------------------------------------------------------- documented shape


def _documented(doc: dict, tz: str) -> dict:
    policies = located("policies", lambda: expect_type(doc["policies"], list, "policies"))
    cues = []
    for i, policy in enumerate(policies):
        cues += located(f"policies[{i}]", lambda p=policy, i=i: _policy_cues(p, i, tz), policy)
    return {
        "framework_option": located("framework_option", lambda: opt_str(doc, "framework_option")),
        "framework_name": located("framework_name", lambda: opt_str(doc, "framework_name")),
        "source_run_id": located("source_run_id", lambda: opt_str(doc, "source_run_id")),
        "social_rl_version": located(
            "social_rl_version", lambda: opt_str(doc, "social_rl_version")
        ),
        "written_at": located("timestamp", lambda: parse_ts(doc.get("timestamp"), tz)),
        "cues": cues,
        "extra": json_text(unknown_fields(doc, DOCUMENTED_FIELDS)),
    }


def _policy_cues(policy: Any, index: int, tz: str) -> list[dict]:
    expect_type(policy, dict, "policy")
    role = expect_type(policy.get("role"), str, "role")
    active = expect_type(policy.get("cues_active") or [], list, "cues_active")
    for cue in active:
        expect_type(cue, str, "cues_active item")
    states = opt_dict(policy.get("cue_states"), "cue_states")
    shared = {
        "feedback_snapshot": json_text(policy.get("feedback_snapshot")),
        "extra": json_text(unknown_fields(policy, POLICY_FIELDS)),
    }
    ids = list(states) + [cue for cue in active if cue not in states]
    if not ids:  # a role without cues still keeps its feedback snapshot
        return [_cue(role, **shared)]
    return [
        _cue(role, cue_index=i, cue_id=cue_id, **shared)
        | located(
            f"policies[{index}].cue_states[{cue_id!r}]",
            lambda c=cue_id: _cue_state(c, states.get(c), c in active, shared["extra"], tz),
            states.get(cue_id),
        )
        for i, cue_id in enumerate(ids)
    ]


def _with_cue_extra(policy_extra: str | None, cue_extra: dict | None) -> dict:
    """Unmapped fields of a cue join those of its policy (under `cue`): none is dropped."""
    if not cue_extra:
        return {}
    merged = (orjson.loads(policy_extra) if policy_extra else {}) | {"cue": cue_extra}
    return {"extra": json_text(merged)}


def _cue_state(
    cue_id: str, state: Any, listed_active: bool, shared_extra: str | None, tz: str
) -> dict:
    """A cue's state; a cue only listed in `cues_active` is active with nothing else known."""
    state = opt_dict(state, "cue state")
    named = state.get("cue_id", cue_id)
    if named != cue_id:
        raise RecordError("bad_value", f"cue_id {named!r} differs from its key {cue_id!r}")
    out = {
        "active": opt_bool(state.get("active"), "active", default=listed_active),
        "intensity": opt_score(state.get("intensity"), "intensity"),
        "last_triggered": parse_ts(state.get("last_triggered"), tz),
    }
    return out | _with_cue_extra(shared_extra, unknown_fields(state, CUE_STATE_FIELDS))


# ---------------------------------------------------------------- per-role shape


def _per_role(doc: dict) -> dict:
    cues = []
    for key, policy in doc.items():
        cues += located(f"[{key!r}]", lambda k=key, p=policy: _role_cues(k, p), policy)
    return {
        "framework_option": None,
        "framework_name": None,
        "source_run_id": None,
        "social_rl_version": None,
        "written_at": None,
        "cues": cues,
        "extra": None,
    }


def _role_cues(role: str, policy: Any) -> list[dict]:
    expect_type(policy, dict, "role policy")
    cues = expect_type(policy.get("cues") or [], list, "cues")
    shared = {
        "policy_name": opt_str(policy, "name"),
        "thresholds": json_text(_thresholds(policy.get("thresholds"))),
        "extra": json_text(unknown_fields(policy, PER_ROLE_FIELDS)),
    }
    if not cues:  # a policy without cues still keeps its name and thresholds
        return [_cue(role, **shared)]
    return [
        _cue(role, cue_index=i, **shared)
        | located(f"[{role!r}].cues[{i}]", lambda c=cue: _role_cue(c, shared["extra"]), cue)
        for i, cue in enumerate(cues)
    ]


def _thresholds(value: Any) -> dict:
    thresholds = opt_dict(value, "thresholds")
    for signal, threshold in thresholds.items():
        opt_score(threshold, f"thresholds.{signal}")
    return thresholds


def _role_cue(cue: Any, shared_extra: str | None) -> dict:
    expect_type(cue, dict, "cue")
    mode = opt_str(cue, "mode")
    out = {
        "cue_id": mode,
        "mode": mode,
        "text": opt_str(cue, "text"),
        "intensity": opt_score(cue.get("intensity"), "intensity"),
        "grounding": opt_str(cue, "grounding") or None,  # "" = no grounding
    }
    return out | _with_cue_extra(shared_extra, unknown_fields(cue, PER_ROLE_CUE_FIELDS))
