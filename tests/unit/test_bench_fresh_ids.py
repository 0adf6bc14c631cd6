"""bench/corpora.py: the demo mix's 1 % new files name new conversations and experiments, not
the corpus's own (a corpus made with another seed reuses the demo's counted ids)."""

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

from corpora import _give_fresh_ids


def test_reused_conversation_event_and_experiment_ids_get_the_tag(tmp_path):
    events = tmp_path / "events.jsonl"
    events.write_bytes(
        b'{"conversation_id":"tut-1000","event_id":"ev-1","turn_index":1,"rating":1}\n'
        b'{"conversation_id":"tut-1001","turn_ind\n'  # a broken record stays broken
        b'{"conversation_id": 7003, "turns": []}\n'
    )
    meta = tmp_path / "meta.json"
    meta.write_bytes(b'{\n  "experiment_id": "ces_exp_286",\n  "model": "mock-llm"\n}\n')

    _give_fresh_ids(events, "n1")
    _give_fresh_ids(meta, "n1")

    assert events.read_bytes() == (
        b'{"conversation_id":"tut-1000-n1","event_id":"ev-1-n1","turn_index":1,"rating":1}\n'
        b'{"conversation_id":"tut-1001-n1","turn_ind\n'
        b'{"conversation_id": 10007003, "turns": []}\n'
    )
    assert meta.read_bytes() == (
        b'{\n  "experiment_id": "ces_exp_286-n1",\n  "model": "mock-llm"\n}\n'
    )


def test_other_files_and_ids_are_left_as_they_are(tmp_path):
    session = tmp_path / "session.json"
    text = b'{"session_id": "s-1", "participant_id": "P01", "decision_id": "d-1"}\n'
    session.write_bytes(text)
    _give_fresh_ids(session, "n1")
    assert session.read_bytes() == text
