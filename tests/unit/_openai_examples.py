"""The smallest OpenAI chat messages and preference pair, shared by the tests of the OpenAI
files' rules and of their regex first pass."""

from __future__ import annotations

USER, ASSISTANT = {"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}


def pair(**change) -> dict:
    """A valid preference example, with `change` replacing its top-level fields."""
    return {
        "input": {"messages": [USER]},
        "preferred_output": [ASSISTANT],
        "non_preferred_output": [ASSISTANT | {"content": "b"}],
    } | change
