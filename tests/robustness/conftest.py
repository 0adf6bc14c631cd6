"""Hypothesis profiles for the robustness (fuzz) suite.

`ci` (default): a fixed example count, derandomized so every CI run tries the same inputs.
`long`: chosen by setting TURNLAKE_FUZZ_EXAMPLES=N; N examples per property, fresh random
inputs every run (failures are kept in .hypothesis/ and replayed first next time).

    TURNLAKE_FUZZ_EXAMPLES=2000 uv run pytest tests/robustness -o addopts=""
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

CI_EXAMPLES = 50
_COMMON = {
    "deadline": None,
    "suppress_health_check": [
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
    "print_blob": True,
}

settings.register_profile(
    "ci", max_examples=CI_EXAMPLES, derandomize=True, database=None, **_COMMON
)
settings.register_profile(
    "long", max_examples=int(os.environ.get("TURNLAKE_FUZZ_EXAMPLES") or CI_EXAMPLES), **_COMMON
)
settings.load_profile("long" if os.environ.get("TURNLAKE_FUZZ_EXAMPLES") else "ci")
