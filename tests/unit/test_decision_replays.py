"""Replay results: both raw line shapes, the silver `replays` rows and the agreement rates, on
inputs written here with expectations worked out by hand."""

import hashlib

import orjson
import polars as pl
import pytest

from pipelines.config.settings import Settings
from pipelines.decisions.compare import actions_side_by_side, agreement_rates
from pipelines.sources.base import RawFile
from pipelines.sources.decision import REPLAYS_TABLE, parse_file
from pipelines.transforms.decision.replays import replays_table


def _batch_line(content: str, status: int = 200, error: dict | None = None) -> bytes:
    body = {"model": "m", "choices": [{"message": {"role": "assistant", "content": content}}]}
    response = {"status_code": status, "body": body}
    return orjson.dumps({"id": "r", "custom_id": "d1", "response": response, "error": error})


OK = orjson.dumps({"action": "POSTED", "response": "hi"}).decode()


@pytest.mark.parametrize(
    ("rel_path", "line", "kind"),
    [
        ("replays/critic/out.jsonl", _batch_line(OK), None),
        ("replays/out.jsonl", _batch_line(OK), "missing_field"),  # no persona folder
        ("replays/critic/out.jsonl", _batch_line(OK, 500), "bad_value"),
        ("replays/critic/out.jsonl", _batch_line(OK, error={"code": "x"}), "bad_value"),
        ("replays/critic/out.jsonl", _batch_line("I would post."), "bad_value"),
        ("replays/critic/out.jsonl", _batch_line('{"response": "hi"}'), "missing_field"),
        (
            "replays/plain.jsonl",
            b'{"decision_id": "d1", "persona": "critic", "action": "POSTED", "confidence": 0.7}',
            None,
        ),
        ("replays/plain.jsonl", b'{"decision_id": "d1", "action": "POSTED"}', "missing_field"),
        (
            "replays/plain.jsonl",
            b'{"decision_id": "d1", "persona": "c", "action": "POSTED", "confidence": 2}',
            "bad_value",
        ),
    ],
)
def test_a_replay_line_is_one_bronze_row_or_one_quarantine_row(tmp_path, rel_path, line, kind):
    file = RawFile("decision", tmp_path / "x.jsonl", rel_path)
    result = parse_file(file, line + b"\n", Settings(raw_root=tmp_path, data_root=tmp_path))
    assert result.records_read == 1
    if kind is None:
        (row,) = result.rows[REPLAYS_TABLE]
        assert (row["decision_id"], row["persona"], row["action"]) == ("d1", "critic", "POSTED")
    else:
        assert [q.error_kind for q in result.quarantine] == [kind]


def _results(rows: list[tuple[str, str, str, str, int]]) -> pl.DataFrame:
    """(file, decision_id, persona, action, line)."""
    return pl.DataFrame(
        {
            "file": [r[0] for r in rows],
            "locator": [f"line {r[4]}" for r in rows],
            "line": [r[4] for r in rows],
            "decision_id": [r[1] for r in rows],
            "persona": [r[2] for r in rows],
            "model": [None] * len(rows),
            "shape": ["plain"] * len(rows),
            "action": [r[3] for r in rows],
            "confidence": [None] * len(rows),
            "reasoning": [None] * len(rows),
            "response": [None] * len(rows),
            "extra": [None] * len(rows),
        },
        schema_overrides={
            "model": pl.String,
            "confidence": pl.Float64,
            "reasoning": pl.String,
            "response": pl.String,
            "extra": pl.String,
        },
    )


DECISIONS = pl.DataFrame(
    {
        "decision_id": ["d1", "d2", "d3"],
        "episode_id": ["decision:s"] * 3,
        "action": ["POSTED", "SILENT", "POSTED"],
        "domain": ["chat", "chat", "code"],
    }
)


def test_replays_keep_the_last_copy_join_their_decision_and_say_if_they_agree():
    results = _results(
        [
            ("replays/a.jsonl", "d1", "critic", "SILENT", 1),  # replaced by b.jsonl's: conflict
            ("replays/b.jsonl", "d1", "critic", " posted ", 1),  # agrees (trimmed, no case)
            ("replays/b.jsonl", "d2", "critic", "POSTED", 2),  # disagrees with SILENT
            ("replays/b.jsonl", "d3", "critic", "SILENT", 3),
            ("replays/b.jsonl", "d2", "calm", "SILENT", 4),  # agrees
            ("replays/b.jsonl", "d9", "calm", "SILENT", 5),  # no such decision: orphan
        ]
    )
    replays, rejected = replays_table(results, DECISIONS)
    got = replays.sort("persona", "decision_id").select("persona", "decision_id", "agrees")
    assert got.rows() == [
        ("calm", "d2", True),
        ("critic", "d1", True),
        ("critic", "d2", False),
        ("critic", "d3", False),
    ]
    assert sorted(rejected.select("error_kind", "file").rows()) == [
        ("duplicate_conflict", "replays/a.jsonl"),
        ("orphan", "replays/b.jsonl"),
    ]
    # critic: chat 1 of 2 agree → 0.5, code 0 of 1 → 0.0; calm: chat 1 of 1 → 1.0
    rates = agreement_rates(replays).select(
        "persona", "domain", "replayed", "agreeing", "agreement_rate"
    )
    assert rates.rows() == [
        ("calm", "chat", 1, 1, 1.0),
        ("critic", "chat", 2, 1, 0.5),
        ("critic", "code", 1, 0, 0.0),
    ]
    side = actions_side_by_side(replays)
    assert side.columns == ["decision_id", "domain", "original_action", "calm", "critic"]
    assert side.filter(pl.col("decision_id") == "d2").row(0)[2:] == ("SILENT", "SILENT", "POSTED")


def test_a_replay_id_is_the_hash_of_its_decision_and_persona():
    results = _results([("replays/b.jsonl", "d2", "calm", "SILENT", 1)])
    replays, _ = replays_table(results, DECISIONS)
    text = '["replay","d2","calm"]'
    assert replays["replay_id"].to_list() == [hashlib.sha256(text.encode()).hexdigest()[:20]]
