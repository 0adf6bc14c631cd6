"""An environment without turnlake's own settings, for builds whose result other tests share."""

import os

import pytest


def without_turnlake_settings(env: pytest.MonkeyPatch) -> None:
    """Unsets every `TURNLAKE_*` variable for as long as `env` is active."""
    for name in [n for n in os.environ if n.startswith("TURNLAKE_")]:
        env.delenv(name)
