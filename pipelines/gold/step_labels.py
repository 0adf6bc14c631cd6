"""Step-label rules: a step's reward → a good / not-good label, for the `stepwise` dataset (TRL's
stepwise supervision, the format a process reward model trains on).

A label rule is `name@version` like a reward rule (registry.py), chosen by `[labels] stepwise` in
rewards.toml, its thresholds under `[<name>]`. It reads no feedback of its own: it thresholds the
step rewards the reward rules already made, so a label always traces to a reward row and its
feedback. Changing what a label means is a new version (and a new release content hash: the
rules file is in every release's config).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import polars as pl

STEPWISE_LABEL = "stepwise_label"
LABEL_RULES = (f"{STEPWISE_LABEL}@1",)


@dataclass(frozen=True)
class StepLabels:
    """`stepwise_label@1`, its thresholds as shipped in rewards.toml.

    - study: step k (the operator reply IQL step k chose) is good when its reward — the change of
      the judged stance it caused plus the terminal reward of the ending it caused (the step's
      `rl_steps` reward) — is at least `study_min_reward`; at 0: the stance did not regress and
      the reply did not end the session in a refusal.
    - social_rl: an agent's round is good when its weighted feedback mean (on [0, 1]) is above
      `social_rl_feedback_above`, i.e. its `social_rl_feedback` reward 2m − 1 is above 2t − 1.
    """

    rule: str = LABEL_RULES[0]
    study_min_reward: float = 0.0
    social_rl_feedback_above: float = 0.5

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> StepLabels:
        """From the gold parameters (rewards.toml merged with a run's overrides)."""
        rule = params.get("labels", {}).get("stepwise", LABEL_RULES[0])
        own = params.get(rule.split("@")[0], {})
        return cls(
            rule=rule,
            study_min_reward=float(own.get("study_min_reward", cls.study_min_reward)),
            social_rl_feedback_above=float(
                own.get("social_rl_feedback_above", cls.social_rl_feedback_above)
            ),
        )

    def study(self, reward: pl.Expr) -> pl.Expr:
        """Label of a study step from its reward (null reward: no label)."""
        return reward >= self.study_min_reward

    def social_rl(self, reward: pl.Expr) -> pl.Expr:
        """Label of a Social RL agent round from its `social_rl_feedback` reward (2m − 1)."""
        return reward > 2 * self.social_rl_feedback_above - 1


def label_rule_problems(params: Mapping[str, Any]) -> list[str]:
    """A `[labels] stepwise` that names no registered label rule (for params.value_problems)."""
    rule = params.get("labels", {}).get("stepwise")
    if rule is None or rule in LABEL_RULES:
        return []
    return [f"[labels] stepwise: unknown label rule {rule!r}; registered: {', '.join(LABEL_RULES)}"]
