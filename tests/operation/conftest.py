"""The world every kill test starts from: built once per test run (`built_once`), so that the two
kill test files can run on two test workers at once without building it twice."""

import json
import shutil
from pathlib import Path

import pytest

from tests.demo_sources import write_demo_of
from tests.operation.kill import build, published

# The demo's sources the world is made of: the two whose raw files it grows (dialogue: new files,
# study: an appended file). Every crash point is in code all sources go through (ingest, silver
# assembly, table commits, views, release), so the demo's five other sources would only add CPU
# to the world's builds and to each test's killed and recovering builds.
WORLD_SOURCES = ("dialogue", "study")


def make_world(root: Path, home: Path) -> None:
    """A data root built from demo data, raw data that has grown since (new and appended files),
    and what an uninterrupted build of the grown data on a copy of that root publishes."""
    raw_old, raw_new = root / "raw_old", root / "raw_new"
    write_demo_of(raw_old, WORLD_SOURCES, seed=3)
    shutil.copytree(raw_old, raw_new)
    write_demo_of(root / "more", WORLD_SOURCES, seed=4)
    for path in (root / "more" / "dialogues").rglob("*.jsonl"):
        target = raw_new / "dialogues" / "grown" / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, target)
    master = raw_new / "survey_responses" / "conversations" / "all_conversations.jsonl"
    master.write_bytes(master.read_bytes() + b"\n")
    baseline = root / "baseline"
    assert build(raw_old, baseline, home) == 0
    # A copy of the baseline shares its generated pseudonym key, so its releases compare by hash.
    reference = root / "reference"
    shutil.copytree(baseline, reference, symlinks=True)
    assert build(raw_new, reference, home) == 0
    old, new = published(baseline), published(reference)
    assert old != new  # else a kill could not be told from a build that changed nothing
    (root / "published.json").write_text(json.dumps({"old": old, "new": new}))


@pytest.fixture(scope="module")
def world(built_once, new_dagster_home):
    """The grown raw data, the baseline data root (read-only: copy it), a Dagster home of this
    module's own, and what the baseline and an uninterrupted build of the grown data publish."""
    root = built_once.get("kill-world", lambda root: make_world(root, new_dagster_home()))
    found = json.loads((root / "published.json").read_text())
    old, new = (tuple(found[name]) for name in ("old", "new"))
    return root / "raw_new", root / "baseline", new_dagster_home(), old, new
