"""OpenAI fine-tuning lines from released rows (pipelines/exports/openai.py), judged by the format
rules as OpenAI's fine-tuning guides state them, written here from the documentation, not from
the writer: the chat format (`messages`, last message the assistant's, `weight` 0/1 on assistant
messages only) and the preference format (`input.messages` ending with a user message,
`preferred_output` / `non_preferred_output` each exactly one assistant message), no empty
content."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from pipelines.exports.openai import openai_preference, openai_sft

ROLES = {"system", "user", "assistant"}


def _message_problems(message: object, weights_allowed: bool) -> list[str]:
    if not isinstance(message, dict):
        return ["a message is not an object"]
    allowed = {"role", "content", "weight"} if weights_allowed else {"role", "content"}
    problems = [f"unknown key {k!r}" for k in message if k not in allowed]
    if message.get("role") not in ROLES:
        problems.append(f"role {message.get('role')!r}")
    content = message.get("content")
    if not isinstance(content, str) or not content.strip():
        problems.append("empty content")
    if "weight" in message and (message["role"] != "assistant" or message["weight"] not in (0, 1)):
        problems.append("weight on a non-assistant message or not 0/1")
    return problems


def chat_problems(line: str) -> list[str]:
    """The documented rules of a chat fine-tuning example that `line` breaks."""
    example = json.loads(line)
    if set(example) != {"messages"}:
        return [f"keys {sorted(example)}"]
    messages = example["messages"]
    problems = [p for m in messages for p in _message_problems(m, weights_allowed=True)]
    if not messages or messages[-1].get("role") != "assistant":
        problems.append("does not end with an assistant message")
    trained = [m for m in messages if m.get("role") == "assistant" and m.get("weight", 1) == 1]
    if not trained:
        problems.append("no assistant message is trained")
    return problems


def preference_problems(line: str) -> list[str]:
    """The documented rules of a preference fine-tuning example that `line` breaks."""
    example = json.loads(line)
    if set(example) != {"input", "preferred_output", "non_preferred_output"}:
        return [f"keys {sorted(example)}"]
    messages = example["input"].get("messages") or []
    problems = [p for m in messages for p in _message_problems(m, weights_allowed=False)]
    if not messages or messages[-1].get("role") != "user":
        problems.append("input does not end with a user message")
    for key in ("preferred_output", "non_preferred_output"):
        output = example[key]
        if not (isinstance(output, list) and len(output) == 1):
            problems.append(f"{key} is not one message")
            continue
        problems += _message_problems(output[0], weights_allowed=False)
        if output[0].get("role") != "assistant":
            problems.append(f"{key} is not the assistant's")
    return problems


def _chat(*pairs: tuple[str, str]) -> list[dict]:
    return [{"role": role, "content": content} for role, content in pairs]


def test_an_sft_row_trains_its_last_assistant_turn_only():
    sft = pl.DataFrame(
        {
            "split": ["train"],
            "messages": [
                _chat(("system", "Be brief."), ("user", 'Say "hi"'), ("assistant", "hi"))
                + _chat(("user", "Again\nplease"), ("assistant", "hi again"))
            ],
        }
    )
    lines, left_out = openai_sft(sft)
    expected = (
        '{"messages":[{"role":"system","content":"Be brief."},'
        '{"role":"user","content":"Say \\"hi\\""},'
        '{"role":"assistant","content":"hi","weight":0},'
        '{"role":"user","content":"Again\\nplease"},'
        '{"role":"assistant","content":"hi again","weight":1}]}'
    )
    assert lines.to_dicts() == [{"split": "train", "line": expected}]
    assert left_out == {}
    assert chat_problems(expected) == []


def test_a_preference_row_becomes_input_preferred_and_non_preferred_output():
    preference = pl.DataFrame(
        {
            "split": ["test"],
            "prompt": [_chat(("user", "2+2?"))],
            "chosen": [_chat(("assistant", "4"))],
            "rejected": [_chat(("assistant", "5"))],
        }
    )
    lines, left_out = openai_preference(preference)
    expected = (
        '{"input":{"messages":[{"role":"user","content":"2+2?"}]},'
        '"preferred_output":[{"role":"assistant","content":"4"}],'
        '"non_preferred_output":[{"role":"assistant","content":"5"}]}'
    )
    assert lines.to_dicts() == [{"split": "test", "line": expected}]
    assert left_out == {}
    assert preference_problems(expected) == []


def test_sft_rows_breaking_a_rule_are_left_out_and_counted_by_reason():
    sft = pl.DataFrame(
        {
            "split": ["train"] * 4,
            "messages": [
                _chat(("user", "q"), ("assistant", "a")),  # kept
                _chat(("user", "q"), ("assistant", "  ")),  # empty content
                _chat(("user", "q"), ("assistant", "a"), ("user", "more?")),  # ends with user
                _chat(("narrator", "q"), ("assistant", "a")),  # unknown role
            ],
        }
    )
    lines, left_out = openai_sft(sft)
    assert lines.height == 1
    assert left_out == {
        "empty_content": 1,
        "not_ending_with_assistant": 1,
        "unknown_role": 1,
    }


def test_preference_rows_breaking_a_rule_are_left_out_and_counted_by_reason():
    one = _chat(("assistant", "a"))
    preference = pl.DataFrame(
        {
            "split": ["train"] * 4,
            "prompt": [
                _chat(("user", "q")),  # kept
                _chat(("user", "q"), ("assistant", "x")),  # input ends with the assistant
                _chat(("user", "q")),  # two-message output
                _chat(("user", "")),  # empty content
            ],
            "chosen": [one, one, _chat(("assistant", "a"), ("user", "b")), one],
            "rejected": [one, one, one, one],
        }
    )
    lines, left_out = openai_preference(preference)
    assert lines.height == 1
    assert left_out == {
        "empty_content": 1,
        "input_not_ending_with_user": 1,
        "output_not_one_assistant_message": 1,
    }


@pytest.mark.parametrize(
    ("dataset", "convert", "problems"),
    [("sft", openai_sft, chat_problems), ("preference", openai_preference, preference_problems)],
)
def test_every_line_made_from_the_demo_release_meets_the_documented_rules(
    demo_warehouse, dataset, convert, problems
):
    from pipelines.release.store.files import latest_release

    exports = Path(demo_warehouse) / "exports"
    rows = pl.read_parquet(exports / latest_release(exports) / dataset / "*.parquet")
    lines, left_out = convert(rows)
    assert lines.height + sum(left_out.values()) == rows.height
    assert lines.filter(pl.col("split") == "train").height > 0
    broken = {line: p for line in lines.get_column("line") if (p := problems(line))}
    assert not broken, next(iter(broken.items()))
