"""The shape of the asset graph is a committed snapshot: renaming an asset, moving it to another
group, changing its upstream assets, adding or dropping a check (or making one non-blocking), or
renaming a job, schedule or sensor shows up here as a diff to review.

After an intended change: `TURNLAKE_UPDATE_SNAPSHOTS=1 uv run pytest tests/test_asset_keys.py -n 0`,
then commit `tests/snapshots/definitions.json`."""

from __future__ import annotations

import difflib
import json
import os
from pathlib import Path

import dagster as dg
import pytest

from pipelines.definitions import defs

SNAPSHOT = Path(__file__).parent / "snapshots" / "definitions.json"
UPDATE_ENV = "TURNLAKE_UPDATE_SNAPSHOTS"


def graph_shape(definitions: dg.Definitions) -> dict:
    """Asset keys with their group, upstream assets and checks; job, schedule and sensor names."""
    graph = definitions.resolve_asset_graph()
    assets = {}
    for key in sorted(graph.get_all_asset_keys()):
        node = graph.get(key)
        checks = {
            check.name: "blocking" if graph.get_check_spec(check).blocking else "non-blocking"
            for check in sorted(node.check_keys, key=lambda c: c.name)
        }
        assets[key.to_user_string()] = {
            "group": node.group_name,
            "deps": sorted(parent.to_user_string() for parent in node.parent_keys),
            "checks": checks,
        }
    repository = definitions.get_repository_def()
    return {
        "assets": assets,
        # Dagster's implicit `__ASSET_JOB` is not ours to name.
        "jobs": sorted(j.name for j in repository.get_all_jobs() if not j.name.startswith("__")),
        "schedules": sorted(s.name for s in repository.schedule_defs),
        "sensors": sorted(s.name for s in repository.sensor_defs),
    }


def as_text(shape: dict) -> str:
    return json.dumps(shape, indent=2, sort_keys=True) + "\n"


def test_asset_graph_matches_the_committed_snapshot():
    current = as_text(graph_shape(defs))
    if os.environ.get(UPDATE_ENV) == "1":
        SNAPSHOT.parent.mkdir(exist_ok=True)
        SNAPSHOT.write_text(current, encoding="utf-8")
    committed = SNAPSHOT.read_text(encoding="utf-8") if SNAPSHOT.exists() else ""
    diff = "".join(
        difflib.unified_diff(
            committed.splitlines(keepends=True),
            current.splitlines(keepends=True),
            fromfile=f"{SNAPSHOT.name} (committed)",
            tofile="pipelines.definitions (now)",
        )
    )
    if diff:
        pytest.fail(
            f"The asset graph differs from {SNAPSHOT}:\n{diff}\nIf the change is intended: "
            f"{UPDATE_ENV}=1 uv run pytest tests/{Path(__file__).name} -n 0, then commit the "
            "snapshot.",
            pytrace=False,
        )
