"""The lines of the OpenAI files that pass every rule of openai_lines.py, as one regex per format,
matched in Polars (Rust's regex) over a whole file: a columnar first pass.

Each grammar is sound, not complete: a line it matches is a line the Python rules accept, and a
file with a line it does not match is judged line by line by those rules, so the problems found
are the same. It accepts
the converter's own layout (exports/openai.py: no white space between tokens, keys in its order)
and, in a content text, only what every JSON reader reads the same: characters other than
controls, quotes and backslashes, the short escapes, and `\\u` escapes of characters that are not
surrogates. "Not empty, not spaces alone" is one raw character that is not a space by Python's
`str.isspace` (nor any other Unicode space) in the text; a text of escapes or rarer spaces alone
is left to the Python rules."""

from __future__ import annotations

from pathlib import Path

import polars as pl

# a character of a JSON string as every reader decodes it (no escaped surrogates)
_CHAR = (
    r'(?:[^"\\\x00-\x1F]|\\["\\/bfnrt]'
    r"|\\u(?:[0-9A-Ca-c][0-9A-Fa-f]{3}|[Dd][0-7][0-9A-Fa-f]{2}|[EFef][0-9A-Fa-f]{3}))"
)
# a raw character no `str.isspace` (nor Unicode White_Space) calls a space: the text is not empty
SOLID = r'[^"\\\x00-\x20\x7F-\xA0\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}]'
_TEXT = '"' + _CHAR + "*" + SOLID + _CHAR + '*"'


def _message(role: str, tail: str = "") -> str:
    return r'\{"role":"' + role + r'","content":' + _TEXT + tail + r"\}"


_SYSTEM, _USER, _ASSISTANT = _message("system"), _message("user"), _message("assistant")
_TRAINED = _message("assistant", r'(?:,"weight":1)?')
_CONTEXT = _message("assistant", r',"weight":0')
_WEIGHTED = f"(?:{_SYSTEM}|{_USER}|{_TRAINED}|{_CONTEXT})"
_PLAIN = f"(?:{_SYSTEM}|{_USER}|{_ASSISTANT})"

# last message the assistant's, one of them trained: ... trained [, ... untrained]
CHAT = (
    r'\{"messages":\[(?:' + _WEIGHTED + ",)*" + _TRAINED
    + "(?:,(?:" + _WEIGHTED + ",)*" + _CONTEXT + r")?\]\}"
)  # fmt: skip
PREFERENCE = (
    r'\{"input":\{"messages":\[(?:' + _PLAIN + ",)*" + _USER + r"\]\}"
    + r',"preferred_output":\[' + _ASSISTANT + r"\]"
    + r',"non_preferred_output":\[' + _ASSISTANT + r"\]\}"
)  # fmt: skip


def every_line_matches(path: Path, grammar: str) -> bool:
    """Whether every line of the file matches `grammar` (then it breaks no rule); False for a
    file that is not UTF-8. The lines are Polars' `scan_lines`: cut at each newline alone, a
    carriage return before it dropped (JSON's white space either way)."""
    try:
        found = pl.scan_lines(path).select(pl.col("line").str.contains(f"^(?:{grammar})$").all())
        return bool(found.collect().item())
    except pl.exceptions.ComputeError:  # not UTF-8
        return False
