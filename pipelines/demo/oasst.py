"""Demo raw data for `oasst`: OpenAssistant message trees as OASST's exporter writes them.

Layout: `oasst/demo/trees.jsonl`, one tree per line. Covers branches (ranked assistant replies,
rank 0 = best), a prompt with one unranked reply, emojis (`+1`, `-1`, `red_flag`, `_skip_reply`)
absent on some nodes and null on others, `labels` with `quality`, a deleted reply (with a reply of
its own), an unreviewed reply, a fully synthetic tree with a `model_name`; plus two bad trees (a
`system` role, a reply whose `parent_id` is not its parent's id).
"""

from __future__ import annotations

import json
import random
import uuid
from pathlib import Path

PROMPTS = (
    (
        "How do I keep basil alive on a windowsill?",
        (
            (
                "Give it at least six hours of sun, water when the top centimetre of soil is dry, "
                "and "
                "pinch off the flower buds so the plant keeps making leaves."
            ),
            "Basil likes warmth and light. A south-facing window works; avoid cold drafts.",
            "Just water it every day and it will be fine.",
        ),
        "Thanks! Should I repot it from the supermarket pot?",
        (
            (
                "Yes: those pots hold several crowded seedlings. Split them into two or three pots "
                "with fresh compost and they will last for months."
            ),
        ),
    ),
    (
        "What is the difference between a list and a tuple in Python?",
        (
            (
                "A list is mutable (you can append, remove, change items); a tuple is immutable. "
                "Tuples can be dictionary keys, lists cannot."
            ),
            "Tuples use round brackets and lists use square brackets.",
        ),
        "Which one is faster to create?",
        (
            (
                "Creating a tuple is usually a little faster, since Python can build constant "
                "tuples "
                "once at compile time."
            ),
            "Lists.",
        ),
    ),
)


def _id(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _node(rng: random.Random, text: str, role: str, parent: str | None, **fields) -> dict:
    node = {"message_id": _id(rng), "parent_id": parent, "text": text, "role": role}
    node |= {"lang": "en", "review_count": 3, "review_result": True, "deleted": False}
    node |= {"synthetic": False, "replies": []} | fields
    if parent is None:
        node.pop("parent_id")
    return node


def _emojis(rng: random.Random, rank: int) -> dict | None:
    if rng.random() < 0.3:
        return None
    votes = {"+1": max(0, 3 - rank + rng.randint(0, 1)), "-1": rank + rng.randint(0, 1)}
    votes["_skip_reply"] = rng.randint(0, 2)
    return {name: n for name, n in votes.items() if n}


def _tree(rng: random.Random, spec: tuple, synthetic: bool = False) -> dict:
    question, answers, follow_up, follow_answers = spec
    extra = {"synthetic": True, "model_name": "demo-20b"} if synthetic else {}
    root = _node(rng, question, "prompter", None, **extra)
    for rank, text in enumerate(answers):
        reply = _node(rng, text, "assistant", root["message_id"], rank=rank, **extra)
        if (emojis := _emojis(rng, rank)) is not None:
            reply["emojis"] = emojis
        if rank == 0:
            reply["labels"] = {"quality": {"value": round(0.9 - rng.random() * 0.2, 3), "count": 3}}
            ask = _node(rng, follow_up, "prompter", reply["message_id"], **extra)
            ask["replies"] = [
                _node(rng, t, "assistant", ask["message_id"], **({"rank": i} if i else {}), **extra)
                for i, t in enumerate(follow_answers)
            ]
            if len(follow_answers) > 1:
                ask["replies"][0]["rank"] = 0
            reply["replies"] = [ask]
        root["replies"].append(reply)
    return {"message_tree_id": root["message_id"], "tree_state": "ready_for_export", "prompt": root}


def _odd_replies(rng: random.Random, tree: dict) -> None:
    """A deleted reply (with its own reply, left out with it) and an unreviewed one."""
    root = tree["prompt"]
    gone = _node(rng, "Buy a new one every week.", "assistant", root["message_id"], deleted=True)
    gone["replies"] = [_node(rng, "Why?", "prompter", gone["message_id"])]
    pending = _node(rng, "Mist it daily.", "assistant", root["message_id"], review_result=None)
    pending["emojis"] = {"red_flag": 1}
    root["replies"] += [gone, pending]


def write(raw_root: Path, rng: random.Random, scale: int = 1) -> None:
    trees = [_tree(rng, spec) for _ in range(scale) for spec in PROMPTS]
    _odd_replies(rng, trees[0])
    trees.append(_tree(rng, PROMPTS[1], synthetic=True))
    bad_role = _tree(rng, PROMPTS[0])
    bad_role["prompt"]["replies"][1]["role"] = "system"
    bad_parent = _tree(rng, PROMPTS[1])
    bad_parent["prompt"]["replies"][0]["parent_id"] = _id(rng)
    path = Path(raw_root) / "oasst" / "demo" / "trees.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(t, ensure_ascii=False) for t in [*trees, bad_role, bad_parent]]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
