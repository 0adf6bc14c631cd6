"""bench/corpora.py: a run measures only the corpus its marker recorded; the demo mix's night
files an interrupted run left are removed first, anything else that differs stops the run."""

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

from corpora import check_intact


def _corpus(tmp_path: Path) -> dict:
    raw = tmp_path / "corpus" / "raw"
    (raw / "study").mkdir(parents=True)
    (raw / "study" / "s1.json").write_bytes(b"12345")
    (raw / "study" / "s2.json").write_bytes(b"123")
    return {"raw": str(raw), "files": 2, "bytes": 8}  # by hand: 5 + 3 bytes


def test_an_interrupted_nights_files_are_removed_before_the_run(tmp_path):
    info = _corpus(tmp_path)
    raw = Path(info["raw"])
    (raw / "study" / "s9-bench1pct.json").write_bytes(b"night")
    (raw / "scenarios" / "x" / "id-bench1pct").mkdir(parents=True)
    (raw / "scenarios" / "x" / "id-bench1pct" / "moderator_dialog.jsonl").write_bytes(b"{}\n")
    check_intact(info)
    assert sorted(p.name for p in raw.rglob("*") if p.is_file()) == ["s1.json", "s2.json"]


def test_a_corpus_that_differs_from_its_marker_stops_the_run(tmp_path):
    info = _corpus(tmp_path)
    with open(Path(info["raw"]) / "study" / "s2.json", "ab") as grown:  # a long file grew
        grown.write(b"4")
    with pytest.raises(SystemExit, match="9 bytes"):
        check_intact(info)
