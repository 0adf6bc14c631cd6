"""dialogue bronze → silver on tiny hand-built frames."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from pipelines.config.settings import Settings
from pipelines.schemas import conform, frame_from_rows, polars_schema, silver_schema
from pipelines.schemas.bronze.dialogue import BRONZE_MODELS
from pipelines.schemas.silver import SILVER_MODELS
from pipelines.sources import dialogue
from pipelines.transforms.dialogue import to_silver

CONV, EVENTS = "dialogue_conversations", "dialogue_feedback_events"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def conversation(
    cid: str,
    roles: list[str],
    *,
    dataset="support",
    file="dialogues/support/a.jsonl",
    line=1,
    record_hash=None,
    **fields,
) -> dict:
    turns = [
        {"role": r, "content": f"{r} says {i}", "ts": None, "extra": None}
        for i, r in enumerate(roles)
    ]
    return {
        "file": file,
        "locator": f"line {line} (byte 0)",
        "line": line,
        "dataset": dataset,
        "conversation_id": cid,
        "turns": turns,
        "record_hash": record_hash or f"h-{cid}",
        **fields,
    }


def event(
    cid: str,
    turn_index: int | None,
    *,
    key: str,
    dataset="support",
    file="feedback/support/a.jsonl",
    line=1,
    record_hash=None,
    **fields,
) -> dict:
    return {
        "file": file,
        "locator": f"line {line} (byte 0)",
        "line": line,
        "dataset": dataset,
        "event_key": key,
        "conversation_id": cid,
        "turn_index": turn_index,
        "record_hash": record_hash or f"h-{key}",
        **fields,
    }


def silver(
    conversations: list[dict], events: list[dict], settings: Settings | None = None
) -> dict[str, pl.DataFrame]:
    bronze = {
        CONV: frame_from_rows(conversations, polars_schema(BRONZE_MODELS[CONV])).lazy(),
        EVENTS: frame_from_rows(events, polars_schema(BRONZE_MODELS[EVENTS])).lazy(),
    }
    out = to_silver(bronze, settings or Settings())
    return {
        t: SILVER_MODELS[t].validate(conform(f, silver_schema(t)).collect(), lazy=True)
        for t, f in out.items()
    }


def quarantine_kinds(out: dict) -> list[tuple[str, str]]:
    return sorted(zip(out["quarantine"]["locator"], out["quarantine"]["error_kind"], strict=True))


def test_conversation_becomes_episode_scoped_by_dataset_with_turns_in_order():
    out = silver(
        [
            conversation(
                "c1", ["system", "user", "assistant"], tags=["billing"], extra='{"channel":"web"}'
            )
        ],
        [],
    )
    episode = out["episodes"].row(0, named=True)
    assert episode["episode_id"] == episode["group_id"] == "dialogue:support/c1"
    assert (episode["native_id"], episode["n_turns"], episode["source"]) == (
        "support/c1",
        3,
        "dialogue",
    )
    assert (
        '"tags":["billing"]' in episode["attributes"]
        and '"extra":{"channel":"web"}' in episode["attributes"]
    )
    assert out["turns"]["turn_id"].to_list() == [f"dialogue:support/c1#{i}" for i in range(3)]
    assert out["turns"]["role"].to_list() == ["system", "user", "assistant"]


def test_other_role_names_map_to_canonical_roles_and_keep_native_role():
    out = silver([conversation("c1", ["Customer", "bot", "tool", "narrator"])], [])
    assert out["turns"]["role"].to_list() == ["user", "assistant", "system", "agent"]
    assert out["turns"]["native_role"].to_list() == ["Customer", "bot", "tool", "narrator"]


def test_identical_copies_in_two_files_give_one_episode_without_quarantine():
    copies = [
        conversation("c1", ["user"], file=f, record_hash="same")
        for f in ("dialogues/support/a.jsonl", "dialogues/support/b.jsonl")
    ]
    out = silver(copies, [])
    assert out["episodes"].height == 1 and out["quarantine"].height == 0


def test_different_copies_keep_the_later_file_and_quarantine_the_other():
    old = conversation("c1", ["user"], file="dialogues/support/a.jsonl", record_hash="old")
    new = conversation(
        "c1", ["user", "assistant"], file="dialogues/support/b.jsonl", record_hash="new"
    )
    out = silver([new, old], [])
    assert out["episodes"]["source_file"].to_list() == ["dialogues/support/b.jsonl"]
    assert out["episodes"]["n_turns"].to_list() == [2]
    q = out["quarantine"].row(0, named=True)
    assert (q["file"], q["error_kind"], q["stage"]) == (
        "dialogues/support/a.jsonl",
        "duplicate_conflict",
        "silver",
    )


def test_turn_index_is_resolved_with_the_dataset_base():
    conversations = [
        conversation("c1", ["user", "assistant"], dataset="zero"),
        conversation("c1", ["user", "assistant"], dataset="one"),
    ]
    events = [
        event("c1", 1, key="k0", dataset="zero", rating=1.0),
        event("c1", 2, key="k1", dataset="one", rating=1.0),
    ]
    out = silver(conversations, events, Settings(dialogue_turn_index_base={"one": 1}))
    assert sorted(out["feedback"]["turn_id"].to_list()) == [
        "dialogue:one/c1#1",
        "dialogue:zero/c1#1",
    ]


def test_rating_reward_and_comment_of_one_event_become_three_rows():
    out = silver(
        [conversation("c1", ["user", "assistant"])],
        [event("c1", 1, key="k", rating=-1.0, reward=-0.5, comment="Wrong menu.")],
    )
    rows = {r["name"]: r for r in out["feedback"].iter_rows(named=True)}
    assert set(rows) == {"rating", "reward", "comment"}
    assert rows["rating"]["value_num"] == -1.0 and rows["reward"]["value_num"] == -0.5
    assert rows["comment"]["value_text"] == "Wrong menu." and rows["comment"]["scale"] == "text"
    assert {r["feedback_id"] for r in rows.values()} == {
        "dialogue:k:rating",
        "dialogue:k:reward",
        "dialogue:k:comment",
    }
    assert all(r["target"] == "turn" and r["source_kind"] == "human" for r in rows.values())


def test_event_without_turn_index_targets_the_episode():
    out = silver([conversation("c1", ["user"])], [event("c1", None, key="k", rating=0.0)])
    row = out["feedback"].row(0, named=True)
    assert (row["target"], row["turn_id"], row["episode_id"]) == (
        "episode",
        None,
        "dialogue:support/c1",
    )


def test_redelivered_event_is_one_row_and_distinct_events_on_one_turn_are_all_kept():
    same = [event("c1", 0, key="dup", line=n, rating=1.0, record_hash="x") for n in (1, 2)]
    other = event("c1", 0, key="other", line=3, rating=-1.0)
    out = silver([conversation("c1", ["assistant"])], [*same, other])
    assert sorted(out["feedback"]["feedback_id"].to_list()) == [
        "dialogue:dup:rating",
        "dialogue:other:rating",
    ]
    assert out["quarantine"].height == 0


def test_event_id_reused_with_other_content_keeps_latest_and_quarantines_older():
    older = event("c1", 0, key="e1", line=1, rating=1.0, record_hash="a")
    newer = event("c1", 0, key="e1", line=2, rating=-1.0, record_hash="b")
    out = silver([conversation("c1", ["assistant"])], [older, newer])
    assert out["feedback"]["value_num"].to_list() == [-1.0]
    assert quarantine_kinds(out) == [("line 1 (byte 0)", "duplicate_conflict")]


def test_bad_events_are_quarantined_in_silver_with_their_kind():
    events = [
        event("ghost", 0, key="a", line=1, rating=1.0),
        event("c1", 2, key="b", line=2, rating=1.0),
        event("c1", -1, key="c", line=3, rating=1.0),
        event("c1", 0, key="d", line=4, rating_raw='"up"'),
        event("c1", 0, key="e", line=5, reward=1.5),
        event("c1", 0, key="f", line=6, rating=3.0),
        event("c1", 1, key="ok", line=7, rating=1.0),
    ]
    out = silver([conversation("c1", ["user", "assistant"])], events)
    assert quarantine_kinds(out) == [
        ("line 1 (byte 0)", "orphan"),
        ("line 2 (byte 0)", "bad_value"),
        ("line 3 (byte 0)", "bad_value"),
        ("line 4 (byte 0)", "bad_value"),
        ("line 5 (byte 0)", "bad_value"),
        ("line 6 (byte 0)", "bad_value"),
    ]
    assert out["feedback"]["feedback_id"].to_list() == ["dialogue:ok:rating"]
    messages = out["quarantine"]["message"].to_list()
    assert any("not a number" in m for m in messages) and any(
        "counts from 0" in m for m in messages
    )


def test_conversation_quality_becomes_episode_feedback_with_inferred_scale():
    conversations = [
        conversation("a", ["user"], quality=0.2),
        conversation("b", ["user"], quality=0.9),
        conversation("s", ["user"], dataset="stars", quality=4.0),
        conversation("l", ["user"], dataset="labels", quality_raw='"excellent"'),
    ]
    out = silver(conversations, [])
    rows = {r["episode_id"]: r for r in out["feedback"].iter_rows(named=True)}
    assert {k: rows[k]["scale"] for k in rows} == {
        "dialogue:support/a": "[0,1]",
        "dialogue:support/b": "[0,1]",
        "dialogue:stars/s": "1-5",
        "dialogue:labels/l": "category",
    }
    assert rows["dialogue:labels/l"]["value_text"] == "excellent"
    assert all(r["target"] == "episode" and r["name"] == "quality" for r in rows.values())


def test_empty_bronze_gives_empty_valid_silver():
    out = silver([], [])
    assert all(frame.height == 0 for frame in out.values())


def test_dirty_fixture_end_to_end_quarantines_what_dirty_md_lists():
    settings = Settings(dialogue_turn_index_base={"tutoring": 1})
    parts: dict[str, list[pl.DataFrame]] = {}
    for file in dialogue.discover(FIXTURES / "dirty"):
        for table, frame in dialogue.parse_file(
            file, file.path.read_bytes(), settings
        ).tables.items():
            parts.setdefault(table, []).append(frame)
    out = to_silver({t: pl.concat(v).lazy() for t, v in parts.items()}, settings)
    q = out["quarantine"].collect()
    assert sorted(zip(q["file"], q["locator"], q["error_kind"], strict=True)) == sorted(
        [
            ("dialogues/support/a-early.jsonl", "line 1 (byte 0)", "duplicate_conflict"),
            ("feedback/support/bad-events.jsonl", "line 1 (byte 0)", "duplicate_conflict"),
            ("feedback/support/bad-events.jsonl", "line 9 (byte 552)", "orphan"),
            ("feedback/support/bad-events.jsonl", "line 10 (byte 622)", "bad_value"),
            ("feedback/support/bad-events.jsonl", "line 11 (byte 692)", "bad_value"),
            ("feedback/support/bad-events.jsonl", "line 12 (byte 764)", "bad_value"),
            ("feedback/support/bad-events.jsonl", "line 13 (byte 844)", "bad_value"),
            ("feedback/tutoring/events.jsonl", "line 1 (byte 0)", "orphan"),
        ]
    )
    assert out["feedback"].collect()["value_num"].to_list() == [-1.0]
