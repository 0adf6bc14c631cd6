"""One chat shape for every chat column of every dataset (DESIGN §5, "What a trainer can rely
on").

A chat row a trainer renders (`sft` messages; `kto` prompt + completion; `preference` prompt +
chosen, prompt + rejected) must be: at most one system message, first; then a user turn; then
user and assistant alternating; ending with an assistant turn. Strict chat templates (Llama-2 /
Mistral style) raise on anything else. The sources do not all speak that way, so every chat
column is mapped into it here, at the end of `build_datasets`, whatever builder made the row:

1. Every system message before the first user turn joins one leading system message.
2. An assistant turn before the first user turn (the study operator's or a scenario moderator's
   opening) becomes system context: `The assistant opened with: <text>`.
3. A system message after the first user turn becomes user text `System: <text>`; a message with
   any
   other role becomes user text `<role>: <text>` (Social RL agents are already named user turns).
4. Consecutive messages of one role are merged into one, their texts joined by a blank line
   (several
   other agents speaking in a row become one user turn of named lines).
5. prompt / completion columns: a prompt that ends with an assistant turn (the assistant spoke
   twice
   in a row) hands that turn to the completion, which starts with it, so prompt + completion
   still alternate; chosen and rejected get the same text, so they still answer the same prompt.
6. A row with no user turn at all cannot be shaped (there is nothing the assistant answers) and
   is
   left out; `build_datasets` counts it as `no_user_turn`.

Pure Polars (explode, a run id per role change, group-by): no Python loop over rows.
"""

from __future__ import annotations

import polars as pl

from pipelines.exports.datasets.common import MESSAGES

SYSTEM, USER, ASSISTANT = "system", "user", "assistant"
OPENING_PREFIX = "The assistant opened with: "
LATE_SYSTEM_PREFIX = "System: "
JOIN = "\n\n"


def _long(messages: pl.Series, opens_chat: bool) -> pl.DataFrame:
    """One row per message: `_row` (position of its list), `role`, `content`, in list order, and
    `_kept`: false where the shape may change the message or its list (`_as_shaped`)."""
    frame = pl.DataFrame({"_m": messages}).with_row_index("_row")
    exploded = frame.explode("_m").with_columns(_kept=_as_shaped(opens_chat).fill_null(False))
    return exploded.filter(pl.col("_m").is_not_null()).select(
        "_row",
        role=pl.col("_m").struct.field("role").fill_null(USER),
        content=pl.col("_m").struct.field("content").fill_null(""),
        _kept="_kept",
    )


def _as_shaped(opens_chat: bool) -> pl.Expr:
    """A message no rule changes: role and content given, not the role of the message before it
    (rule 4); opening a chat, also user or assistant and, first in its list, user (rules 1–3). An
    empty list or a missing message (a null `_m`) is changed (left out)."""
    m = pl.col("_m")
    role = m.struct.field("role")
    first = _starts_list()
    kept = m.is_not_null() & role.is_not_null() & m.struct.field("content").is_not_null()
    kept = kept & (first | (role != role.shift(1)))
    if opens_chat:
        kept = kept & role.is_in([USER, ASSISTANT]) & (~first | (role == USER))
    return kept


def _mapped(long: pl.DataFrame) -> pl.DataFrame:
    """Rules 1–3: each message's role and content in the shaped chat."""
    role = pl.col("role")
    # user turns so far in the list: the running count over all lists less its count at the
    # list's start (a window per list cost more than the rest of the shape)
    speaks_as_user = (~role.is_in([SYSTEM, ASSISTANT])).cast(pl.Int64)
    so_far = speaks_as_user.cum_sum()
    at_start = pl.when(_starts_list()).then(so_far - speaks_as_user).forward_fill()
    before_user = so_far == at_start
    new_role = (
        pl.when(before_user)
        .then(pl.lit(SYSTEM))
        .when(role == SYSTEM)
        .then(pl.lit(USER))
        .when(role == ASSISTANT)
        .then(pl.lit(ASSISTANT))
        .otherwise(pl.lit(USER))
    )
    # a prefix chosen per message, then joined once: each branch of a `when` is computed for
    # every message, and the contents are most of the strings
    prefix = (
        pl.when(before_user & (role == ASSISTANT))
        .then(pl.lit(OPENING_PREFIX))
        .when(before_user)
        .then(pl.lit(""))
        .when(role == SYSTEM)
        .then(pl.lit(LATE_SYSTEM_PREFIX))
        .when(role.is_in([USER, ASSISTANT]))
        .then(pl.lit(""))
        .otherwise(role + pl.lit(": "))
    )
    mapped = long.with_columns(_prefix=prefix, role=new_role)
    # most messages keep their text: only the prefixed ones are joined (a join copies the text)
    prefixed = mapped.select(pl.arg_where(pl.col("_prefix") != "")).to_series()
    subset = mapped[prefixed]
    texts = mapped["content"].scatter(prefixed, subset["_prefix"] + subset["content"])
    return mapped.drop("_prefix").with_columns(content=texts)


def _merged(long: pl.DataFrame) -> pl.DataFrame:
    """Rule 4: one message per run of equal roles, in order."""
    starts = _starts_list() | (pl.col("role") != pl.col("role").shift(1)).fill_null(True)
    runs = long.with_columns(
        _run=starts.cast(pl.Int64).cum_sum(), _alone=starts & starts.shift(-1).fill_null(True)
    )
    # most runs are one message, kept as it is: grouping them cost most of the shape
    alone = runs.filter("_alone").select("_run", "_row", "role", "content")
    merged = (
        runs.filter(~pl.col("_alone"))
        .group_by("_run", maintain_order=True)
        .agg(pl.col("_row").first(), pl.col("role").first(), pl.col("content").str.join(JOIN))
    )
    return pl.concat([alone, merged]).sort("_run")


def _starts_list() -> pl.Expr:
    """The first message of its list (rows of one list are consecutive, in list order)."""
    return (pl.col("_row") != pl.col("_row").shift(1)).fill_null(True)


def shape_messages(messages: pl.Series, *, opens_chat: bool = True) -> pl.Series:
    """Each message list mapped by rules 1–4 (a null or empty list gives an empty list).

    `opens_chat=False` (a completion, which continues a prompt): only rule 4, roles kept."""
    typed = messages.cast(MESSAGES)
    long = _long(typed, opens_chat)
    # most lists are in the shape already: only the others are exploded, merged and rebuilt
    changed = long.filter(~pl.col("_kept")).get_column("_row").unique()
    long = long.filter(pl.col("_row").is_in(changed.implode())).drop("_kept")
    merged = _merged(_mapped(long) if opens_chat else long)
    lists = merged.group_by("_row", maintain_order=True).agg(
        pl.struct("role", "content").alias("messages")
    )
    rows = pl.DataFrame({"_m": typed}).with_row_index("_row")
    out = rows.join(lists, on="_row", how="left", maintain_order="left")
    shaped = pl.col("messages").fill_null(pl.lit([], dtype=MESSAGES)).cast(MESSAGES)
    rebuilt = pl.col("_row").is_in(changed.implode()) | pl.col("_m").is_null()
    kept = pl.when(rebuilt).then(shaped).otherwise(pl.col("_m"))
    return out.select(kept.alias(messages.name)).to_series()


def shape_columns(columns: list[pl.Series], *, opens_chat: bool = True) -> list[pl.Series]:
    """Several message columns shaped as `shape_messages` shapes each, in one pass over all
    their lists: a pass has a fixed cost, which the many small chunks of a release pay per
    column otherwise."""
    whole = pl.concat([column.cast(MESSAGES).rename("_m") for column in columns])
    shaped = shape_messages(whole, opens_chat=opens_chat)
    out, start = [], 0
    for column in columns:
        out.append(shaped.slice(start, column.len()).rename(column.name))
        start += column.len()
    return out


def _role(message: pl.Expr) -> pl.Expr:
    return message.struct.field("role")


def _has_user(column: str) -> pl.Expr:
    return pl.col(column).list.eval(_role(pl.element())).list.contains(USER)


def kept_conversations(shaped: pl.DataFrame, column: str) -> tuple[pl.DataFrame, int]:
    """Rows whose shaped `column` is a whole chat: some user turn, the assistant turn last; also
    how many were left out."""
    ends_with_assistant = _role(pl.col(column).list.last()) == ASSISTANT
    kept = shaped.filter(_has_user(column) & ends_with_assistant)
    return kept, shaped.height - kept.height


def shape_conversations(frame: pl.DataFrame, column: str) -> tuple[pl.DataFrame, int]:
    """Rows whose `column` is a whole chat ending in the assistant turn (sft): shaped, and the rows
    that cannot be (no user turn, or no assistant turn last) left out; also how many were."""
    return kept_conversations(frame.with_columns(shape_messages(frame[column])), column)


def _hand_trailing_assistant(
    frame: pl.DataFrame, prompt: str, completions: tuple[str, ...]
) -> pl.DataFrame:
    """Rule 5: a shaped prompt's final assistant turn moves to the front of every completion."""
    trailing = _role(pl.col(prompt).list.last()) == ASSISTANT
    handed = pl.col(prompt).list.last().struct.field("content")
    moved = []
    for column in completions:
        first = pl.col(column).list.first()
        joined = pl.struct(
            pl.lit(ASSISTANT).alias("role"),
            pl.concat_str(handed, pl.lit(JOIN), first.struct.field("content")).alias("content"),
        )
        rest = pl.col(column).list.slice(1)
        moved.append(
            pl.when(trailing)
            .then(pl.concat_list(joined, rest))
            .otherwise(pl.col(column))
            .cast(MESSAGES)
            .alias(column)
        )
    shortened = (
        pl.when(trailing)
        .then(pl.col(prompt).list.head(pl.col(prompt).list.len() - 1))
        .otherwise(pl.col(prompt))
    )
    return frame.with_columns(*moved).with_columns(shortened.cast(MESSAGES).alias(prompt))


def kept_prompt_completions(
    shaped: pl.DataFrame, prompt: str, completions: tuple[str, ...]
) -> tuple[pl.DataFrame, int]:
    """Rows whose columns are shaped (the prompt by rules 1–4, the completions by rule 4): rule 5
    applied, the rows whose prompt has no user turn or whose completion is not one assistant turn
    left out; also how many were."""
    handed = _hand_trailing_assistant(shaped, prompt, completions)
    ok = _has_user(prompt) & (_role(pl.col(prompt).list.last()) == USER)
    for column in completions:
        first_role = _role(pl.col(column).list.first())
        ok = ok & (pl.col(column).list.len() == 1) & (first_role == ASSISTANT)
    kept = handed.filter(ok)
    return kept, shaped.height - kept.height


def shape_prompt_completions(
    frame: pl.DataFrame, prompt: str, completions: tuple[str, ...]
) -> tuple[pl.DataFrame, int]:
    """Rows of a prompt and one or more completions (kto: completion; preference: chosen, rejected):
    every column shaped, the rows whose prompt has no user turn or whose completion is not one
    assistant turn left out; also how many were."""
    shaped = frame.with_columns(
        shape_messages(frame[prompt]),
        *shape_columns([frame[c] for c in completions], opens_chat=False),
    )
    return kept_prompt_completions(shaped, prompt, completions)


def shape_prompts(frame: pl.DataFrame, prompt: str) -> pl.DataFrame:
    """A prompt-only column (the `decisions` dataset's): shaped by rules 1–4, no row left out."""
    return frame.with_columns(shape_messages(frame[prompt]))
