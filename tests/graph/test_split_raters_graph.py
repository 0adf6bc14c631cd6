"""`[splits] link_raters` flipped on a built data root: the next build regroups dialogue, moves
the groups to the new partition scheme, makes a release with another content hash whose split
proof passes, and flipping back gives the first release's content again."""

from pathlib import Path

import orjson
import polars as pl
import pytest

from pipelines.cli.main import main
from pipelines.partitions.store import MAP_TABLE
from pipelines.release.store.files import latest_release, read_manifest
from pipelines.release.store.verify import verify_release
from pipelines.splits.assign import proof_problems
from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout
from tests.graph.test_partitions_graph import KEY, demo_built

SHARDS = 4


def _build(raw: Path, data: Path, link_raters: bool) -> None:
    config = data.parent / f"turnlake-raters-{link_raters}.toml"
    config.write_text(
        f"[partitions]\nshards = {SHARDS}\nepisodes_per_partition = 5000\n"
        f"[splits]\nlink_raters = {str(link_raters).lower()}\n"
    )
    args = ["build", "--raw-root", str(raw), "--data-root", str(data), "--log-level", "ERROR"]
    with pytest.MonkeyPatch.context() as env:
        env.setenv("TURNLAKE_CONFIG", str(config))
        assert main(args) == 0


def _dialogue_groups(data: Path) -> dict[str, str]:
    episodes = stored.read(Layout(data), "silver", "episodes")
    dialogue = episodes.filter(pl.col("source") == "dialogue")
    return dict(dialogue.select("episode_id", "group_id").iter_rows())


def _latest(data: Path) -> tuple[Path, dict]:
    exports = Layout(data).exports
    release = exports / latest_release(exports)
    return release, read_manifest(release)


SHARED_RATER = [  # one rater, two conversations of the demo (each alone in its group before)
    {"conversation_id": c, "turn_index": 1, "rating": 1, "user_id": "u-shared", "event_id": e}
    for c, e in (("sup-1001", "evt-raters-1"), ("sup-1003", "evt-raters-2"))
]
PAIR = {"dialogue:support/sup-1001", "dialogue:support/sup-1003"}


def test_flipping_link_raters_regroups_dialogue_and_changes_the_release(
    tmp_path, monkeypatch, built_once
):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    monkeypatch.setenv("TURNLAKE_PSEUDONYM_KEY", KEY)
    raw, data = demo_built(built_once, SHARDS, to=tmp_path / "flip")
    alone = _dialogue_groups(data)
    assert alone == {e: e for e in alone} and PAIR <= set(alone)
    lines = b"".join(orjson.dumps(r) + b"\n" for r in SHARED_RATER)
    (raw / "feedback" / "support" / "events-raters.jsonl").write_bytes(lines)
    _build(raw, data, link_raters=True)
    linked = _dialogue_groups(data)
    pair_group = {linked[e] for e in PAIR}
    assert len(pair_group) == 1 and pair_group <= PAIR  # named after one of the two
    assert {e: g for e, g in linked.items() if e not in PAIR} == {
        e: e for e in alone if e not in PAIR
    }
    _, first = _latest(data)
    schemes_before = set(stored.read(Layout(data), "silver", MAP_TABLE)["scheme"])

    _build(raw, data, link_raters=False)
    assert _dialogue_groups(data) == alone
    assert PAIR <= set(stored.read(Layout(data), "gold", "splits")["group_id"])
    schemes = set(stored.read(Layout(data), "silver", MAP_TABLE)["scheme"])
    assert len(schemes) == 1 and schemes.isdisjoint(schemes_before)
    release, manifest = _latest(data)
    assert manifest["content_hash"] != first["content_hash"]
    assert manifest["config"]["splits"]["link_raters"] is False
    assert "link_raters" not in first["config"]["splits"]
    proof = orjson.loads((release / "split_proof.json").read_bytes())
    assert proof_problems(proof) == [] and proof["raters_linked"] is False
    assert proof["unchecked_participant_kinds"]["feedback_rater"] > 0
    assert verify_release(release) == []
    assert "dialogue raters do not link conversations" in (release / "README.md").read_text()

    _build(raw, data, link_raters=True)
    assert _dialogue_groups(data) == linked
    # the same content as the first release: that version is reused and named LATEST again
    assert latest_release(Layout(data).exports) == first["version"]
