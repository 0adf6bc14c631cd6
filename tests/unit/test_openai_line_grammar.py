"""The regexes that pass the OpenAI files' lines in Polars before any is judged in Python
(pipelines/release/trainability/openai_grammar.py): they never pass a line the Python rules
refuse, they pass every line the converter writes, and a file with a line they do not pass is
judged line by line, as before."""

from __future__ import annotations

import sys

import orjson
import polars as pl
import pytest

from pipelines.exports.openai import openai_preference, openai_sft
from pipelines.release.trainability.openai_grammar import (
    CHAT,
    PREFERENCE,
    SOLID,
    every_line_matches,
)
from pipelines.release.trainability.openai_lines import (
    chat_fault,
    file_problems,
    preference_fault,
)
from tests.unit._openai_examples import ASSISTANT, USER, pair

SYSTEM = {"role": "system", "content": "s"}
TRAINED, CONTEXT = ASSISTANT | {"weight": 1}, ASSISTANT | {"weight": 0}


def _matches(grammar: str, line: bytes) -> bool:
    return bool(pl.Series([line.decode()]).str.contains(f"^(?:{grammar})$").item())


SPACES = ["", " ", "\u3000\n", "\u00a0", "\u2028", "\x1c", "\t \r", "\u0085\u202f"]
CHATS = [
    {"messages": [USER, TRAINED]},
    {"messages": [SYSTEM, USER, CONTEXT, USER, TRAINED]},
    {"messages": [USER, TRAINED, USER, CONTEXT]},
    {"messages": [USER, ASSISTANT]},
    {"messages": [USER]},
    {"messages": []},
    {"messages": [USER, CONTEXT]},
    {"messages": [USER, ASSISTANT | {"weight": 2}]},
    {"messages": [USER, ASSISTANT | {"weight": True}]},
    {"messages": [USER, ASSISTANT | {"weight": 1.0}]},
    {"messages": [USER | {"weight": 1}, TRAINED]},
    {"messages": [{"role": "tool", "content": "x"}, TRAINED]},
    {"messages": [USER | {"name": "x"}, TRAINED]},
    {"messages": [USER | {"content": 5}, TRAINED]},
    {"messages": [USER | {"content": None}, TRAINED]},
    {"messages": [USER, TRAINED], "id": 1},
    *({"messages": [USER | {"content": space}, TRAINED]} for space in SPACES),
    *({"messages": [USER, TRAINED | {"content": space}]} for space in SPACES),
]
PAIRS = [
    pair(),
    pair(input={"messages": [SYSTEM, USER, ASSISTANT, USER]}),
    pair(input={"messages": [USER, ASSISTANT]}),
    pair(input={"messages": []}),
    pair(input={"messages": [USER], "id": 1}),
    pair(preferred_output=[ASSISTANT, ASSISTANT]),
    pair(preferred_output=[]),
    pair(non_preferred_output=[USER]),
    pair(preferred_output=[TRAINED]),
    pair(input={"messages": [USER | {"weight": 1}]}),
    *(pair(preferred_output=[ASSISTANT | {"content": space}]) for space in SPACES),
    *(pair(input={"messages": [USER | {"content": space}]}) for space in SPACES),
]
# what orjson writes (the converter's layout) and lines a reader might not read as orjson does
CHAT_LINES = [orjson.dumps(example) for example in CHATS] + [
    b'{"messages":[{"role":"user","content":"\\u0020"},' + orjson.dumps(TRAINED) + b"]}",
    b'{"messages":[{"role":"user","content":"\\n\\t"},' + orjson.dumps(TRAINED) + b"]}",
    b'{"messages":[{"role":"user","content":"q\\ud800"},' + orjson.dumps(TRAINED) + b"]}",
    b'{"messages":[{"role":"user","content":"q\x01"},' + orjson.dumps(TRAINED) + b"]}",
    b'\xef\xbb\xbf{"messages":[' + orjson.dumps(USER) + b"," + orjson.dumps(TRAINED) + b"]}",
    b'{"messages":[' + orjson.dumps(USER) + b"," + orjson.dumps(TRAINED) + b"]}}",
    b'{"messages":[' + orjson.dumps(USER) + b"," + orjson.dumps(TRAINED) + b"]",
    b'{"messages":[' + orjson.dumps(USER) + b"," + orjson.dumps(TRAINED) + b'],"messages":[]}',
]


@pytest.mark.parametrize("line", CHAT_LINES)
def test_the_chat_grammar_passes_no_line_the_rules_refuse(line):
    refused = chat_fault(orjson.loads(line)) if _parses(line) else "not JSON"
    assert not (_matches(CHAT, line) and refused)


@pytest.mark.parametrize("line", [orjson.dumps(example) for example in PAIRS])
def test_the_preference_grammar_passes_no_line_the_rules_refuse(line):
    assert not (_matches(PREFERENCE, line) and preference_fault(orjson.loads(line)))


def _parses(line: bytes) -> bool:
    try:
        orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    return True


def test_solid_matches_no_character_python_calls_a_space():
    every = [chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF]
    solid = pl.Series(every).str.contains(f"^{SOLID}$").to_list()
    assert [c for c, s in zip(every, solid, strict=True) if s and c.isspace()] == []
    assert sum(solid) > 1_000_000  # and it is nearly every character


MESSAGES = pl.List(pl.Struct({"role": pl.String, "content": pl.String}))
TALK = [
    {"role": "system", "content": 'Say "hi" \\ then\nwait\t\u00e9\u4e2d\U0001f600'},
    {"role": "user", "content": " q \u3000"},
    {"role": "assistant", "content": "a\r\n"},
    {"role": "user", "content": "\x7f?"},
    {"role": "assistant", "content": "b"},
]


def test_the_grammars_pass_every_line_the_converter_writes():
    sft = pl.DataFrame(
        {"split": ["train"] * 2, "messages": [TALK, TALK[1:3]]},
        schema_overrides={"messages": MESSAGES},
    )
    chat, _ = openai_sft(sft)
    preference, _ = openai_preference(
        pl.DataFrame(
            {
                "split": ["train"],
                "prompt": [TALK[:2]],
                "chosen": [TALK[2:3]],
                "rejected": [TALK[4:]],
            },
            schema_overrides={c: MESSAGES for c in ("prompt", "chosen", "rejected")},
        )
    )
    assert chat.height == 2 and preference.height == 1
    assert all(_matches(CHAT, line.encode()) for line in chat["line"])
    assert _matches(PREFERENCE, preference["line"].item().encode())


def test_polars_cuts_lines_at_newlines_alone():
    """What `every_line_matches` relies on: the lines Python reads, a carriage return before the
    newline aside (white space to JSON)."""
    lines = pl.scan_lines(b"a\r\n\n b \rc\n\xef\xbb\xbfd\nlast").collect()["line"].to_list()
    assert lines == ["a", "", " b \rc", "\ufeffd", "last"]


def test_a_file_with_a_line_the_grammar_does_not_pass_is_judged_line_by_line(tmp_path):
    good = orjson.dumps({"messages": [USER, TRAINED]})
    spaced = (
        b'{"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}'
    )
    path = tmp_path / "train.jsonl"
    path.write_bytes(b"\n".join([good, spaced, b"{", good, good[:-1]]) + b"\n")
    assert not every_line_matches(path, CHAT)
    assert file_problems(path, "train.jsonl", chat_fault, CHAT) == [
        "train.jsonl: 2 lines break OpenAI's format (not JSON), e.g. lines [3, 5]"
    ]
    path.write_bytes(b"\n".join([good, good]) + b"\n")
    assert every_line_matches(path, CHAT)
    path.write_bytes(b"\n".join([good, b"\xff"]) + b"\n")
    assert not every_line_matches(path, CHAT)
