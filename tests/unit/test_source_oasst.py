"""The oasst adapter: trees flatten in pre-order with their parents, bad trees are quarantined
with the node that broke the format, dirty fixtures match DIRTY.md."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipelines.config.settings import Settings
from pipelines.sources import oasst
from pipelines.sources.base import RawFile, RecordError
from pipelines.sources.oasst.records import tree_row

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def node(mid: str, role: str, *replies: dict, **fields) -> dict:
    return {"message_id": mid, "text": f"text of {mid}", "role": role, "replies": list(replies)}


TREE = {
    "message_tree_id": "p",
    "prompt": node(
        "p",
        "prompter",
        node("a", "assistant", node("a.q", "prompter")),
        node("b", "assistant"),
    ),
}


def test_nodes_come_in_preorder_with_parent_and_depth():
    rows = tree_row(TREE, "en", "UTC")["messages"]
    assert [(m["message_id"], m["parent_id"], m["depth"]) for m in rows] == [
        ("p", None, 0),
        ("a", "p", 1),
        ("a.q", "a", 2),
        ("b", "p", 1),
    ]


def test_a_flag_is_inherited_by_the_replies_below_it_only():
    tree = json.loads(json.dumps(TREE))
    tree["prompt"]["replies"][0]["deleted"] = True
    rows = {m["message_id"]: m for m in tree_row(tree, "en", "UTC")["messages"]}
    assert rows["a"]["deleted"] and not rows["a"]["deleted_above"]
    assert rows["a.q"]["deleted_above"] and not rows["b"]["deleted_above"]


@pytest.mark.parametrize(
    ("change", "kind", "where"),
    [
        (lambda t: t["prompt"]["replies"][1].update(role="system"), "bad_value", "replies[1]"),
        (lambda t: t["prompt"]["replies"][0].update(parent_id="zz"), "bad_value", "replies[0]"),
        (lambda t: t["prompt"]["replies"][1].update(message_id="a"), "bad_value", "replies[1]"),
        (lambda t: t["prompt"]["replies"][0].update(rank="best"), "bad_type", "replies[0]"),
        (lambda t: t["prompt"]["replies"][0].update(emojis=[1]), "bad_type", "replies[0]"),
        (lambda t: t.pop("prompt"), "missing_field", ""),
    ],
    ids=["role", "parent_id", "duplicate_id", "rank", "emojis", "no_prompt"],
)
def test_a_bad_node_rejects_its_tree_and_names_the_node(change, kind, where):
    tree = json.loads(json.dumps(TREE))
    change(tree)
    with pytest.raises(RecordError) as err:
        tree_row(tree, "en", "UTC")
    assert err.value.kind == kind and where in err.value.message


def test_dirty_fixtures_quarantine_exactly_what_dirty_md_lists():
    quarantined, n_bronze, n_read = set(), 0, 0
    for file in oasst.discover(FIXTURES / "dirty"):
        result = oasst.parse_file(file, file.path.read_bytes(), Settings())
        quarantined |= {(q.file, q.locator, q.error_kind) for q in result.quarantine}
        n_bronze, n_read = n_bronze + result.n_bronze, n_read + result.records_read
    listed = (FIXTURES / "dirty" / "oasst" / "DIRTY.md").read_text()
    assert quarantined and all(
        f"| {f} | {loc} | {kind} |" in listed for f, loc, kind in quarantined
    )
    assert n_read == n_bronze + len(quarantined) == 6


def test_dataset_is_first_folder_or_default():
    assert oasst.dataset_of("oasst/en/2023/trees.jsonl") == "en"
    assert oasst.dataset_of("oasst/trees.jsonl") == "default"


def test_a_file_over_the_size_limit_is_one_too_large_row(tmp_path):
    path = tmp_path / "oasst" / "t.jsonl"
    path.parent.mkdir()
    path.write_text(json.dumps(TREE) + "\n")
    settings = Settings()
    settings = Settings(limits=type(settings.limits)(max_file_bytes=10))
    result = oasst.parse_file(RawFile.under("oasst", tmp_path, path), path.read_bytes(), settings)
    assert [q.error_kind for q in result.quarantine] == ["too_large"] and result.records_read == 1
