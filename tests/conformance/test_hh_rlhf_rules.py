"""Conformance: the hh_rlhf source (issue 17 item 5), on hand-written pairs and the real
harmless-base sample. Expected values are written out by hand from the rules in
pipelines/sources/hh_rlhf/records.py and pipelines/transforms/hh_rlhf."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import polars as pl
import pytest

from tests.conformance.harness import run_pipeline

REAL = Path(__file__).resolve().parents[3] / "shared" / "real_samples" / "hh_rlhf"


def transcript(*turns: tuple[str, str]) -> str:
    return "".join(f"\n\n{role}: {text}" for role, text in turns)


PROMPT = (
    ("Human", "My neighbour's dog barks all night."),
    ("Assistant", "Have you talked to them?"),
)
PAIRS = [
    {
        "chosen": transcript(*PROMPT, ("Human", "Twice."), ("Assistant", "Try the council.")),
        "rejected": transcript(*PROMPT, ("Human", "Twice."), ("Assistant", "Poison it.")),
    },
    {  # the chosen answer is two Assistant turns in a row
        "chosen": transcript(
            ("Human", "Candle overnight?"), ("Assistant", "No."), ("Assistant", "Fire risk.")
        ),
        "rejected": transcript(("Human", "Candle overnight?"), ("Assistant", "Sure.")),
    },
    {  # an empty chosen answer: quarantined
        "chosen": transcript(("Human", "Candle overnight?"), ("Assistant", "")),
        "rejected": transcript(("Human", "Candle overnight?"), ("Assistant", "Sure.")),
    },
]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    raw = tmp_path_factory.mktemp("hh") / "raw"
    path = raw / "hh_rlhf" / "harmless-base" / "test.jsonl.gz"
    path.parent.mkdir(parents=True)
    path.write_bytes(gzip.compress("".join(json.dumps(p) + "\n" for p in PAIRS).encode()))
    return run_pipeline(raw, raw.parent / "data")


def test_a_pair_is_a_prompt_with_two_answers_hanging_off_its_last_turn(built):
    turns = built.silver["turns"].filter(pl.col("text") == "Try the council.")
    episode = turns["episode_id"][0]
    rows = built.silver["turns"].filter(pl.col("episode_id") == episode).sort("turn_index")
    ids = rows["turn_id"].to_list()
    assert rows.select("role", "text", "parent_turn_id").rows() == [
        ("user", "My neighbour's dog barks all night.", None),
        ("assistant", "Have you talked to them?", ids[0]),
        ("user", "Twice.", ids[1]),
        ("assistant", "Try the council.", ids[2]),
        ("assistant", "Poison it.", ids[2]),
    ]
    feedback = built.silver["feedback"].filter(pl.col("episode_id") == episode)
    assert sorted(feedback.select("turn_id", "name", "value_num").rows()) == [
        (ids[3], "preferred", 1.0),
        (ids[4], "preferred", 0.0),
    ]


def test_pairs_are_released_with_the_shared_prompt_and_both_answers(built):
    pairs = built.datasets["preference"].filter(pl.col("source") == "hh_rlhf")
    got = {
        (tuple(m["content"] for m in p), c[0]["content"], r[0]["content"])
        for p, c, r in pairs.select("prompt", "chosen", "rejected").rows()
    }
    assert got == {
        (
            ("My neighbour's dog barks all night.", "Have you talked to them?", "Twice."),
            "Try the council.",
            "Poison it.",
        ),
        (("Candle overnight?",), "No.\n\nFire risk.", "Sure."),  # merged by the chat shape
    }


def test_the_empty_answer_is_quarantined_with_its_reason_and_nothing_is_lost(built):
    quarantine = built.silver["quarantine"]
    offset = sum(len(json.dumps(p)) + 1 for p in PAIRS[:2])  # decompressed bytes before line 3
    assert quarantine.select("locator", "error_kind", "message").rows() == [
        (f"line 3 (byte {offset})", "bad_value", "the chosen answer is empty")
    ]
    assert built.silver["episodes"].height + quarantine.height == len(PAIRS)


def test_no_reward_is_made_of_a_relative_preference(built):
    assert built.gold["turn_rewards"].height == 0


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    if not REAL.exists():
        pytest.skip("../shared/real_samples is absent")
    raw = tmp_path_factory.mktemp("real") / "raw"
    (raw / "hh_rlhf" / "harmless-base").mkdir(parents=True)
    sample = REAL / "harmless-base_test_sample.jsonl.gz"
    (raw / "hh_rlhf" / "harmless-base" / sample.name).write_bytes(sample.read_bytes())
    return run_pipeline(raw, raw.parent / "data")


def test_real_sample_every_pair_is_released_and_nothing_quarantined(real):
    assert real.silver["quarantine"].height == 0
    assert real.silver["episodes"].height == 40
    pairs = real.datasets["preference"].filter(pl.col("source") == "hh_rlhf")
    assert pairs.height == 40


def test_real_sample_line_30_assistant_text_beginning_with_human_stays_assistant_text(real):
    lines = gzip.decompress((REAL / "harmless-base_test_sample.jsonl.gz").read_bytes()).splitlines()
    chosen = json.loads(lines[29])["chosen"]
    assert "\n\nAssistant: Human: No, you are racist" in chosen
    turns = real.silver["turns"].filter(pl.col("text").str.starts_with("Human: No, you are racist"))
    assert turns.height >= 1 and set(turns["role"]) == {"assistant"}
