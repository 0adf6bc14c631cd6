"""Named crash points for the kill tests: `TURNLAKE_KILL_AT=<point>` makes the process SIGKILL
itself there, so tests can prove every write boundary leaves readable, valid data behind."""

from __future__ import annotations

import os
import signal


def crash_point(name: str) -> None:
    if os.environ.get("TURNLAKE_KILL_AT") == name:
        os.kill(os.getpid(), signal.SIGKILL)
