"""The hh_rlhf adapter: each odd case of the real files by its stated rule, pairs that are not two
answers to one prompt quarantined with the reason, gzip failures as file-level rows."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from pipelines.config.settings import Settings
from pipelines.sources import hh_rlhf
from pipelines.sources.base import RawFile, RecordError
from pipelines.sources.hh_rlhf.records import pair_row

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def transcript(*turns: tuple[str, str]) -> str:
    return "".join(f"\n\n{role}: {text}" for role, text in turns)


def split(chosen: str, rejected: str) -> dict:
    return pair_row({"chosen": chosen, "rejected": rejected}, "harmless-base")


def texts(turns: list[dict]) -> list[tuple[str, str]]:
    return [(t["role"], t["text"]) for t in turns]


def test_prompt_is_the_common_prefix_up_to_the_last_shared_human_turn():
    row = split(
        transcript(("Human", "Hi"), ("Assistant", "Hello"), ("Human", "2+2?"), ("Assistant", "4")),
        transcript(("Human", "Hi"), ("Assistant", "Hello"), ("Human", "2+2?"), ("Assistant", "5")),
    )
    assert texts(row["prompt"]) == [("Human", "Hi"), ("Assistant", "Hello"), ("Human", "2+2?")]
    assert texts(row["chosen"]) == [("Assistant", "4")]
    assert texts(row["rejected"]) == [("Assistant", "5")]
    assert row["notes"] == []


def test_assistant_text_that_begins_with_human_colon_stays_assistant_text():
    row = split(
        transcript(("Human", "Insult me"), ("Assistant", "Human: No, you are rude")),
        transcript(("Human", "Insult me"), ("Assistant", "OK")),
    )
    assert texts(row["chosen"]) == [("Assistant", "Human: No, you are rude")]
    assert row["notes"] == ["assistant_text_starts_with_marker"]


def test_two_assistant_turns_in_a_row_after_the_prompt_are_both_in_the_answer():
    row = split(
        transcript(("Human", "Q"), ("Assistant", "Same start"), ("Assistant", "chosen end")),
        transcript(("Human", "Q"), ("Assistant", "Same start"), ("Assistant", "rejected end")),
    )
    assert texts(row["prompt"]) == [("Human", "Q")]
    assert texts(row["chosen"]) == [("Assistant", "Same start"), ("Assistant", "chosen end")]
    assert row["notes"] == ["consecutive_assistant_turns"]


@pytest.mark.parametrize(
    ("chosen", "rejected", "reason"),
    [
        (
            transcript(("Human", "Hi"), ("Assistant", "A"), ("Human", "Q"), ("Assistant", "x")),
            transcript(("Human", "Hi"), ("Assistant", "B"), ("Human", "Q"), ("Assistant", "y")),
            "before their last Human turn",
        ),
        (
            transcript(("Human", "Q"), ("Assistant", "")),
            transcript(("Human", "Q"), ("Assistant", "y")),
            "the chosen answer is empty",
        ),
        (transcript(("Human", "Q"), ("Assistant", "x")),) * 2 + ("the same transcript",),
        (
            transcript(("Human", "Q")),
            transcript(("Human", "Q"), ("Assistant", "y")),
            "chosen has no answer",
        ),
        (
            transcript(("Human", "Q"), ("Assistant", "x")),
            transcript(("Human", "R"), ("Assistant", "x")),
            "before any Human turn",
        ),
        ("Preamble" + transcript(("Human", "Q"), ("Assistant", "x")), "", "before the first"),
        (transcript(("Human", "Q"), ("Assistant", "x")), "", "rejected: an empty transcript"),
    ],
    ids=[
        "differ_early",
        "empty_chosen",
        "identical",
        "no_answer",
        "no_shared_human",
        "preamble",
        "empty_rejected_transcript",
    ],
)
def test_a_pair_that_is_not_two_answers_to_one_prompt_is_bad_value(chosen, rejected, reason):
    with pytest.raises(RecordError) as err:
        split(chosen, rejected)
    assert err.value.kind == "bad_value" and reason in err.value.message


def test_dirty_fixtures_quarantine_exactly_what_dirty_md_lists():
    quarantined, n_bronze, n_read = set(), 0, 0
    for file in hh_rlhf.discover(FIXTURES / "dirty"):
        result = hh_rlhf.parse_file(file, file.path.read_bytes(), Settings())
        quarantined |= {(q.file, q.locator, q.error_kind) for q in result.quarantine}
        n_bronze, n_read = n_bronze + result.n_bronze, n_read + result.records_read
    listed = (FIXTURES / "dirty" / "hh_rlhf" / "DIRTY.md").read_text()
    assert len(quarantined) == 7
    assert all(f"| {f} | {loc} | {kind} |" in listed for f, loc, kind in quarantined)
    assert n_read == n_bronze + len(quarantined)


def test_gzip_inflating_past_max_file_bytes_is_too_large(tmp_path):
    path = tmp_path / "hh_rlhf" / "x.jsonl.gz"
    path.parent.mkdir()
    line = json.dumps({"chosen": transcript(("Human", "Q"), ("Assistant", "x" * 5000))})
    path.write_bytes(gzip.compress((line + "\n").encode()))
    limits = type(Settings().limits)(max_file_bytes=len(path.read_bytes()) + 100)
    file = RawFile.under("hh_rlhf", tmp_path, path)
    result = hh_rlhf.parse_file(file, path.read_bytes(), Settings(limits=limits))
    assert [(q.locator, q.error_kind) for q in result.quarantine] == [("file", "too_large")]
