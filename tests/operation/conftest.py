"""The world every kill test starts from (module scope: each kill test file builds its own, so
the two files can run on two test workers at once)."""

import shutil

import pytest

from pipelines.demo import write_demo
from tests.operation.kill import build, published


@pytest.fixture(scope="module")
def world(tmp_path_factory, new_dagster_home):
    """A data root built from demo data, raw data that has grown since (new and appended files),
    and what an uninterrupted build of the grown data on a copy of that root publishes."""
    root = tmp_path_factory.mktemp("kill")
    raw_old, raw_new = root / "raw_old", root / "raw_new"
    write_demo(raw_old, scale=1, seed=3)
    shutil.copytree(raw_old, raw_new)
    write_demo(root / "more", scale=1, seed=4)
    for path in (root / "more" / "dialogues").rglob("*.jsonl"):
        target = raw_new / "dialogues" / "grown" / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, target)
    master = raw_new / "survey_responses" / "conversations" / "all_conversations.jsonl"
    master.write_bytes(master.read_bytes() + b"\n")
    home = new_dagster_home()
    baseline = root / "baseline"
    assert build(raw_old, baseline, home) == 0
    # A copy of the baseline shares its generated pseudonym key, so its releases compare by hash.
    reference = root / "reference"
    shutil.copytree(baseline, reference, symlinks=True)
    assert build(raw_new, reference, home) == 0
    old, new = published(baseline), published(reference)
    assert old != new  # else a kill could not be told from a build that changed nothing
    return raw_new, baseline, home, old, new
