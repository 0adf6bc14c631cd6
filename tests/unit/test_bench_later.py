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


def test_a_shapes_night_is_dated_after_the_corpus(tmp_path):
    """bench/shapes.py's 1 % night (tiny files and long files alike) must not predate the corpus:
    a night's conversation dated before the corpus would rename the group it joins."""
    import shapes
    from later import dialogue_files, stamps

    for shape in ("tiny_files", "long_jsonl"):
        raw = tmp_path / shape / "raw"
        shapes.write_shape(shape, raw, 2, seed=7)
        before = {p: p.read_bytes() for p in dialogue_files(raw)}
        corpus_last = max(stamps(before))
        undo = shapes.add_one_percent(shape, raw, 2, 1007, tmp_path / shape / "night")
        new_stamps = []
        for path in dialogue_files(raw):
            old = before.get(path, b"")
            new_stamps += stamps_of(path.read_bytes()[len(old) :])
        assert new_stamps, shape
        assert min(new_stamps) > corpus_last, shape
        undo()


def stamps_of(data: bytes):
    from later import _STAMP, _when

    return [_when(m) for m in _STAMP.finditer(data)]
