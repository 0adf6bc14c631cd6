"""bench/later.py: the bench's new dialogue files are dated after the corpus, each timestamp in its
own style; the demo's absurd timestamps stay absurd."""

import sys
from datetime import timedelta
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

from later import shift_after, shift_times


def test_each_timestamp_style_moves_by_the_shift(tmp_path):
    events = tmp_path / "events.jsonl"
    events.write_bytes(
        b'{"conversation_id":"c1","created_at":"2024-06-01T09:06:00Z","turns":[{"ts":1717232760}]}\n'
        b'{"conversation_id":"c2","created_at":"2024-06-01 23:30:00"}\n'
        b'{"conversation_id":"c3","created_at": 1717232760.5}\n'
        b'{"conversation_id":"c4","created_at":"2207-03-01T00:00:00Z","ts":99999999999999999}\n'
        b'{"conversation_id":"c5","created_at":"2024-06-0\n'  # a truncated record stays truncated
    )
    shift_times(events, timedelta(days=10))
    # by hand: 1717232760 = 2024-06-01 09:06:00 UTC; ten days = 864000 s
    assert events.read_bytes() == (
        b'{"conversation_id":"c1","created_at":"2024-06-11T09:06:00Z","turns":[{"ts":1718096760}]}\n'
        b'{"conversation_id":"c2","created_at":"2024-06-11 23:30:00"}\n'
        b'{"conversation_id":"c3","created_at": 1718096760.5}\n'
        b'{"conversation_id":"c4","created_at":"2207-03-01T00:00:00Z","ts":99999999999999999}\n'
        b'{"conversation_id":"c5","created_at":"2024-06-0\n'
    )


def test_the_shift_puts_the_new_files_a_day_past_the_corpus(tmp_path):
    corpus, new = tmp_path / "corpus", tmp_path / "new"
    (corpus / "dialogues" / "support").mkdir(parents=True)
    (corpus / "feedback" / "support").mkdir(parents=True)
    (new / "dialogues" / "support").mkdir(parents=True)
    (corpus / "dialogues" / "support" / "day-01.jsonl").write_bytes(
        b'{"created_at":"2024-06-01 09:00:00"}\n{"created_at":"2024-06-05T12:00:00Z"}\n'
    )
    (corpus / "feedback" / "support" / "events.jsonl").write_bytes(
        b'{"created_at":"2024-06-10T12:00:00Z"}\n{"created_at":"2207-03-01T00:00:00Z"}\n'
    )
    (new / "dialogues" / "support" / "day-01.jsonl").write_bytes(
        b'{"created_at":"2024-06-01 09:00:00"}\n{"created_at":"2024-06-02 10:00:00"}\n'
    )
    # latest corpus time 2024-06-10 12:00 (the absurd 2207 is no time), earliest new 2024-06-01
    # 09:00: 9 days 3 hours apart, so 10 whole days put 2024-06-01 09:00 at 2024-06-11 09:00
    assert shift_after(corpus, new) == timedelta(days=10)
