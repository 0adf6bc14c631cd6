"""OpenAI's fine-tuning files made from released rows: `openai_sft` (the chat format) from `sft`,
`openai_preference` (the preference / DPO format) from `preference`; one JSON line per row.

The rules, as OpenAI's fine-tuning guides state them:

- chat: `{"messages": [{"role": "system" | "user" | "assistant", "content": <text>}, …]}`, ending
  with an assistant message. An assistant message may carry `"weight": 0 | 1` (0: context, not
  trained). An `sft` row trains its last assistant turn only (the earlier ones are context, and
  other rows' targets), so they get weight 0 and the last one weight 1; without weights OpenAI would
  train every earlier turn again in every later row of the conversation.
- preference: `{"input": {"messages": […]}, "preferred_output": [<one assistant message>],
  "non_preferred_output": [<one assistant message>]}`, the input ending with a user message.
- no message with empty content (spaces only count as empty).

The released chat columns already have one shape (exports/datasets/chat_shape.py: one leading
system message at most, user and assistant alternating); a row that still breaks a rule is left
out, counted by reason. JSON is made in Polars (`struct.json_encode`), no Python per row.
"""

from __future__ import annotations

import polars as pl

# The version of the lines this module makes, recorded in every release's config (so in its content
# hash): bump it with any change to what a line holds, so that the change makes a new release.
FORMAT_VERSION = 1
ROLES = ("system", "user", "assistant")
# the released columns each format reads
SFT_COLUMNS = ("split", "messages")
PREFERENCE_COLUMNS = ("split", "prompt", "chosen", "rejected")
EMPTY_CONTENT = "empty_content"
NOT_ASSISTANT_LAST = "not_ending_with_assistant"
NOT_USER_LAST = "input_not_ending_with_user"
NOT_ONE_OUTPUT = "output_not_one_assistant_message"
UNKNOWN_ROLE = "unknown_role"
LINE = "line"


def _contents_present(column: str) -> pl.Expr:
    content = pl.element().struct.field("content").str.strip_chars()
    return pl.col(column).list.eval(content.str.len_chars().fill_null(0) > 0).list.all()


def _roles_known(column: str) -> pl.Expr:
    return pl.col(column).list.eval(pl.element().struct.field("role").is_in(ROLES)).list.all()


def _last_role(column: str) -> pl.Expr:
    return pl.col(column).list.last().struct.field("role")


def _one_assistant(column: str) -> pl.Expr:
    return (pl.col(column).list.len() == 1) & (_last_role(column) == "assistant")


def _messages_json(column: str, weighted: bool) -> pl.Expr:
    """The JSON array of a chat column; with `weighted`, assistant messages carry `weight`: 1 for
    the last message, 0 before it."""
    field = pl.element().struct.field
    message = pl.struct(field("role"), field("content")).struct.json_encode()
    if weighted:
        last = pl.int_range(pl.len()) == pl.len() - 1
        weight = pl.when(last).then(pl.lit(',"weight":1}')).otherwise(pl.lit(',"weight":0}'))
        assistant = pl.element().struct.field("role") == "assistant"
        message = pl.when(assistant).then(message.str.strip_suffix("}") + weight).otherwise(message)
    inner = pl.col(column).list.eval(message).list.join(",")
    return pl.lit("[") + inner + pl.lit("]")


def _problem(checks: list[tuple[str, pl.Expr]]) -> pl.Expr:
    """The first rule a row breaks (null: none), in the order given."""
    out = pl.lit(None, pl.String)
    for reason, ok in reversed(checks):
        out = pl.when(~ok.fill_null(False)).then(pl.lit(reason)).otherwise(out)
    return out


def _split_out(frame: pl.DataFrame, problem: pl.Expr, line: pl.Expr) -> tuple[pl.DataFrame, dict]:
    judged = frame.with_columns(_problem=problem)
    kept = judged.filter(pl.col("_problem").is_null()).select("split", line.alias(LINE))
    counts = judged.drop_nulls("_problem").group_by("_problem").len().sort("_problem")
    return kept, dict(counts.iter_rows())


def openai_sft(sft: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, int]]:
    """(split, line) of every `sft` row in the chat format, in the rows' order; the rows left out,
    by reason."""
    problem = _problem(
        [
            (UNKNOWN_ROLE, _roles_known("messages")),
            (EMPTY_CONTENT, _contents_present("messages")),
            (NOT_ASSISTANT_LAST, _last_role("messages") == "assistant"),
        ]
    )
    line = pl.lit('{"messages":') + _messages_json("messages", weighted=True) + pl.lit("}")
    return _split_out(sft, problem, line)


def openai_preference(preference: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, int]]:
    """(split, line) of every `preference` row in the preference format, in the rows' order; the
    rows left out, by reason."""
    problem = _problem(
        [
            (UNKNOWN_ROLE, _roles_known("prompt")),
            (NOT_ONE_OUTPUT, _one_assistant("chosen") & _one_assistant("rejected")),
            (
                EMPTY_CONTENT,
                _contents_present("prompt")
                & _contents_present("chosen")
                & _contents_present("rejected"),
            ),
            (NOT_USER_LAST, _last_role("prompt") == "user"),
        ]
    )
    line = (
        pl.lit('{"input":{"messages":')
        + _messages_json("prompt", weighted=False)
        + pl.lit('},"preferred_output":')
        + _messages_json("chosen", weighted=False)
        + pl.lit(',"non_preferred_output":')
        + _messages_json("rejected", weighted=False)
        + pl.lit("}")
    )
    return _split_out(preference, problem, line)
