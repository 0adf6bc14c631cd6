"""One HH-RLHF line → prompt + chosen answer + rejected answer.

Turns: a transcript is cut at the markers `\\n\\nHuman:` and `\\n\\nAssistant:` (one space after
the colon is part of the marker; a transcript may also open with the marker without the blank
line). Stated rules for the odd cases of the real files:

- A marker counts only after a blank line: an Assistant turn whose text begins `Human:`
  (`\\n\\nAssistant: Human: No, you are racist…`) is Assistant text (note
  `assistant_text_starts_with_marker`).
- Two Assistant turns in a row stay two turns here (note `consecutive_assistant_turns`); the
  release's chat shape joins them into one assistant message.
- prompt = the longest common prefix of the two turn lists, cut back to its last Human turn; each
  answer = the rest of its transcript. An answer must hold only Assistant turns: chosen and
  rejected that differ at or before their last Human turn answer two different prompts and are
  quarantined (`bad_value`), as are two identical transcripts, a pair with no Human turn before
  they part, and a side with no answer.
- An answer whose turns are all empty (`...\\n\\nAssistant: ` at the end) is no answer to prefer
  or reject: quarantined (`bad_value`). An empty turn inside a longer answer is kept (note
  `empty_turn`).
- Text before the first marker other than whitespace, and an empty transcript: quarantined
  (`bad_value`).
"""

from __future__ import annotations

import re
from itertools import pairwise
from typing import Any

from pipelines.sources.base import RecordError, dumps, stable_hash
from pipelines.sources.values import expect_type, require, unknown_fields

HUMAN, ASSISTANT = "Human", "Assistant"
MARKER = re.compile(r"(?:\n\n|^)(Human|Assistant): ?")
PAIR_FIELDS = frozenset({"chosen", "rejected"})
Turn = tuple[str, str]


def pair_row(record: Any, dataset: str) -> dict[str, Any]:
    record = expect_type(record, dict, "a pair record")
    chosen = expect_type(require(record, "chosen"), str, "'chosen'")
    rejected = expect_type(require(record, "rejected"), str, "'rejected'")
    prompt, chosen_answer, rejected_answer = split_pair(
        transcript(chosen, "chosen"), transcript(rejected, "rejected")
    )
    extra = unknown_fields(record, PAIR_FIELDS)
    return {
        "dataset": dataset,
        "pair_id": stable_hash(chosen, rejected),
        "prompt_id": stable_hash(prompt),
        "prompt": _structs(prompt),
        "chosen": _structs(chosen_answer),
        "rejected": _structs(rejected_answer),
        "notes": notes(prompt, chosen_answer, rejected_answer),
        "extra": dumps(extra) if extra else None,
    }


def transcript(text: str, side: str) -> list[Turn]:
    """The (role, text) turns of one transcript, in order."""
    marks = list(MARKER.finditer(text))
    if not marks and not text.strip():
        raise RecordError("bad_value", f"{side}: an empty transcript (no Human:/Assistant: turn)")
    head = text[: marks[0].start()] if marks else text
    if head.strip():
        raise RecordError(
            "bad_value", f"{side}: text before the first Human:/Assistant: marker: {head[:60]!r}"
        )
    ends = [m.start() for m in marks[1:]] + [len(text)]
    return [(m.group(1), text[m.end() : end]) for m, end in zip(marks, ends, strict=True)]


def split_pair(chosen: list[Turn], rejected: list[Turn]) -> tuple[list[Turn], ...]:
    """(prompt, chosen answer, rejected answer) by the rules of the module docstring."""
    if chosen == rejected:
        raise RecordError("bad_value", "chosen and rejected are the same transcript")
    common = 0
    while common < min(len(chosen), len(rejected)) and chosen[common] == rejected[common]:
        common += 1
    humans = [i for i, (role, _) in enumerate(chosen[:common]) if role == HUMAN]
    if not humans:
        raise RecordError("bad_value", "chosen and rejected part before any Human turn")
    cut = humans[-1] + 1
    prompt, answers = chosen[:cut], {"chosen": chosen[cut:], "rejected": rejected[cut:]}
    for side, answer in answers.items():
        if not answer:
            raise RecordError("bad_value", f"{side} has no answer after the shared prompt")
        if any(role == HUMAN for role, _ in answer):
            raise RecordError(
                "bad_value",
                f"chosen and rejected differ at turn {common}, before their last Human turn: "
                "not two answers to one prompt",
            )
        if not any(text.strip() for _, text in answer):
            raise RecordError("bad_value", f"the {side} answer is empty")
    return prompt, answers["chosen"], answers["rejected"]


def notes(prompt: list[Turn], chosen: list[Turn], rejected: list[Turn]) -> list[str]:
    """Which odd-case rules this pair needed (see the module docstring)."""
    found = set()
    for turns in (prompt + chosen, prompt + rejected):
        for (role, _), (next_role, _) in pairwise(turns):
            if role == next_role == ASSISTANT:
                found.add("consecutive_assistant_turns")
        for role, text in turns:
            if role == ASSISTANT and MARKER.match(text.lstrip()):
                found.add("assistant_text_starts_with_marker")
            if not text.strip():
                found.add("empty_turn")
    return sorted(found)


def _structs(turns: list[Turn]) -> list[dict[str, str]]:
    return [{"role": role, "text": text} for role, text in turns]
