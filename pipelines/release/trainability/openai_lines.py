"""The OpenAI fine-tuning files of a release (store/openai_files.py) checked line by line against
the rules of OpenAI's fine-tuning guides, read from the files themselves (not trusted to the
converter that wrote them: exports/openai.py):

- every line is one JSON object;
- chat (`openai_sft`): `{"messages": [...]}` only; each message `{role, content}` with role system /
  user / assistant, content a non-empty text (spaces alone are empty), `weight` 0 or 1 on assistant
  messages only; the last message the assistant's; at least one assistant message trained
  (`weight` 1 or none);
- preference (`openai_preference`): `input`, `preferred_output`, `non_preferred_output` only;
  `input.messages` as a chat's messages without weights, ending with a user message; each output
  exactly one assistant message.

A file whose every line a regex of its format matches (openai_grammar.py, in Polars) breaks no
rule; any other file is judged in Python (orjson), a line at a time, streamed: memory holds one
line."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import orjson

from pipelines.release.store.openai_files import SUFFIX
from pipelines.release.trainability.openai_grammar import CHAT, PREFERENCE, every_line_matches
from pipelines.release.trainability.problems import EXAMPLES

ROLES = frozenset(("system", "user", "assistant"))
# a message's keys; checked without making a set per message (a release's files hold ~10^6)
KEYS = {True: frozenset(("role", "content", "weight")), False: frozenset(("role", "content"))}
Rule = Callable[[object], str | None]  # a parsed line -> the first rule it breaks (None: none)


def _message_fault(message: object, weighted: bool) -> str | None:
    if not isinstance(message, dict):
        return "a message is not an object"
    if not KEYS[weighted].issuperset(message):
        extra = sorted(set(message) - KEYS[weighted])
        return f"a message has the unknown key {extra[0]!r}"
    role, content = message.get("role"), message.get("content")
    if role not in ROLES:
        return f"a message has the role {role!r}"
    # `not content or content.isspace()` is `not content.strip()` without copying the text
    if not isinstance(content, str) or not content or content.isspace():
        return "a message has empty content"
    if "weight" in message:
        weight = message["weight"]
        if role != "assistant" or isinstance(weight, bool) or weight not in (0, 1):
            return "a weight other than 0 or 1, or on a message not the assistant's"
    return None


def _messages_fault(messages: object, weighted: bool, last: str) -> str | None:
    if not isinstance(messages, list) or not messages:
        return "no messages"
    for message in messages:
        if fault := _message_fault(message, weighted):
            return fault
    if messages[-1]["role"] != last:
        return f"the last message is not the {last}'s"
    return None


def chat_fault(example: object) -> str | None:
    """The first rule of the chat format a parsed line breaks."""
    if not isinstance(example, dict) or len(example) != 1 or "messages" not in example:
        return "not an object of `messages` alone"
    messages = example["messages"]
    if fault := _messages_fault(messages, weighted=True, last="assistant"):
        return fault
    trained = any(m["role"] == "assistant" and m.get("weight", 1) == 1 for m in messages)
    return None if trained else "no assistant message is trained (weight 1)"


def preference_fault(example: object) -> str | None:
    """The first rule of the preference format a parsed line breaks."""
    keys = {"input", "preferred_output", "non_preferred_output"}
    if not isinstance(example, dict) or set(example) != keys:
        return f"not an object of {sorted(keys)}"
    given = example["input"]
    if not isinstance(given, dict) or set(given) != {"messages"}:
        return "`input` is not an object of `messages` alone"
    if fault := _messages_fault(given["messages"], weighted=False, last="user"):
        return f"input: {fault}"
    for key in ("preferred_output", "non_preferred_output"):
        output = example[key]
        if not isinstance(output, list) or len(output) != 1:
            return f"`{key}` is not one message"
        if fault := _messages_fault(output, weighted=False, last="assistant"):
            return f"{key}: {fault}"
    return None


RULES: dict[str, Rule] = {"openai_sft": chat_fault, "openai_preference": preference_fault}
GRAMMARS: dict[str, str] = {"openai_sft": CHAT, "openai_preference": PREFERENCE}


def _line_fault(rule: Rule, line: bytes) -> str | None:
    try:
        example = orjson.loads(line)
    except orjson.JSONDecodeError:
        return "not JSON"
    return rule(example)


def jsonl_files(release: Path) -> list[Path]:
    """The OpenAI files of a release folder, the files these checks read."""
    return [p for config in RULES for p in sorted((release / config).glob(f"*{SUFFIX}"))]


def file_problems(path: Path, name: str, rule: Rule, grammar: str | None = None) -> list[str]:
    """One problem per rule broken in the file, with how many lines and the first line numbers;
    none without reading a line in Python when every line matches `grammar`."""
    if grammar is not None and every_line_matches(path, grammar):
        return []
    found: dict[str, list[int]] = {}
    with open(path, "rb") as lines:
        for number, line in enumerate(lines, 1):
            if fault := _line_fault(rule, line):
                found.setdefault(fault, []).append(number)
    return [
        f"{name}: {len(numbers)} lines break OpenAI's format ({fault}), e.g. lines "
        f"{numbers[:EXAMPLES]}"
        for fault, numbers in found.items()
    ]


def openai_problems(release: Path) -> list[str]:
    """Every rule broken by a line of the release's OpenAI files."""
    return [
        problem
        for path in jsonl_files(release)
        for problem in file_problems(
            path,
            path.relative_to(release).as_posix(),
            RULES[path.parent.name],
            GRAMMARS[path.parent.name],
        )
    ]
