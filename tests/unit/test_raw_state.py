"""The raw-files state the no-change fast path and the sensor compare: every file counts, and a
file changed in the last seconds makes the state "racy" (not to be trusted later)."""

import os
from pathlib import Path

from pipelines.sources.raw_state import raw_state

HOUR_NS = 3600 * 10**9


def write_old(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    stamp = path.stat().st_mtime_ns - HOUR_NS
    os.utime(path, ns=(stamp, stamp))


def test_a_file_written_just_now_makes_the_state_racy_an_hour_old_one_does_not(tmp_path):
    write_old(tmp_path / "dialogues" / "a.jsonl", b"{}\n")
    assert not raw_state(tmp_path).racy
    (tmp_path / "dialogues" / "b.jsonl").write_bytes(b"{}\n")
    assert raw_state(tmp_path).racy


def test_every_file_counts_hidden_and_unrecognised_ones_and_the_opt_out_registry(tmp_path):
    write_old(tmp_path / "dialogues" / "a.jsonl", b"{}\n")
    seen = {raw_state(tmp_path).digest}
    for rel in (".hidden/x.jsonl", "notes/readme.md", "consent/optouts.jsonl"):
        write_old(tmp_path / rel, b"x\n")
        state = raw_state(tmp_path)
        assert state.digest not in seen, f"{rel} did not change the state"
        seen.add(state.digest)
    assert state.n_files == 4


def test_same_size_and_mtime_is_the_same_state_another_mtime_is_not(tmp_path):
    path = tmp_path / "study" / "s.json"
    write_old(path, b"12345")
    before = raw_state(tmp_path)
    stamp = path.stat().st_mtime_ns
    path.write_bytes(b"54321")  # rewritten in place with the same size ...
    os.utime(path, ns=(stamp, stamp))  # ... and its mtime put back: what the ingest also trusts
    assert raw_state(tmp_path) == before
    os.utime(path, ns=(stamp + 10**9, stamp + 10**9))
    assert raw_state(tmp_path).digest != before.digest


def test_the_state_lists_every_file_it_counted_sorted_hidden_ones_included(tmp_path):
    for rel in ("study/s.json", ".hidden/x.jsonl", "dialogues/a.jsonl", "notes.txt"):
        write_old(tmp_path / rel, b"x\n")
    state = raw_state(tmp_path)
    assert state.files == (".hidden/x.jsonl", "dialogues/a.jsonl", "notes.txt", "study/s.json")
    assert state.n_files == 4
