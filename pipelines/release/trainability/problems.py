"""What a trainer can rely on (DESIGN §5), checked on a release's own files after privatization.

Blocking: `make_release` runs `trainability_problems` (folder.py: these checks over a release
folder, a file at a time) on the written temporary folder before the rename (a problem raises
`UntrainableRelease`, nothing is published) and records what it found in the manifest
(record.py); the Dagster check `release:release_is_trainable` judges the latest release from that
record while its files are the bytes checked, else runs the checks on its files again. Problem
kinds:

- `rl_steps`: per episode, steps 0..n-1 without gaps or repeats, one `is_first` (step 0), one
  `is_last` (the last step), `is_terminal` only on the last step with discount 0, one split.
- chat shape of every `sft` messages, `kto` prompt + completion and `preference` prompt + chosen /
  prompt + rejected row: roles system / user / assistant only; at most one system message, first;
  then user and assistant alternating from a user turn; ending with an assistant turn; no null text.
- `preference`: chosen and rejected answer the same prompt (`chosen_prompt_hash` =
  `rejected_prompt_hash` where a pair builder records them); a pair never prefers the lower known
  reward (`reward_chosen` < `reward_rejected`; a missing column or null is an unknown reward).
- `kto`: label = sign of the reward (reward > 0 true, reward < 0 false); no reward-0 row unless the
  release's config says `kto_include_neutral` (then labelled false); no row without a reward.
- `stepwise` (TRL stepwise supervision): a text prompt; completions and labels lists of equal,
  non-zero length; no null or empty completion; labels boolean, none null.
- every dataset with `outcome_was_good`: where it is known, the row's reward (`reward`, else
  `outcome_reward`) does not have the opposite sign.

Pure Polars over the datasets' frames, no Dagster; folder.py reads them from a release's
files.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextvars import ContextVar
from typing import Self

import polars as pl

SYSTEM, USER, ASSISTANT = "system", "user", "assistant"
# dataset -> (prompt column or None, the columns each completing the prompt into one chat)
CHATS: dict[str, tuple[str | None, tuple[str, ...]]] = {
    "sft": (None, ("messages",)),
    "kto": ("prompt", ("completion",)),
    "preference": ("prompt", ("chosen", "rejected")),
}
RLDS_COLUMNS = ("episode_id", "step", "is_first", "is_last", "is_terminal", "discount", "split")
CHECKED_COLUMNS = (
    *RLDS_COLUMNS,
    "label",
    "reward",
    "outcome_reward",
    "outcome_was_good",
    "reward_chosen",
    "reward_rejected",
    "chosen_prompt_hash",
    "rejected_prompt_hash",
    *("prompt", "completions", "labels"),
)
# columns that name a row in a problem message, first present wins
ROW_NAMES = ("turn_id", "decision_id", "chosen_turn_id", "episode_id")
EXAMPLES = 3


class UntrainableRelease(RuntimeError):
    """The release's own files break what a trainer relies on: nothing is published."""


def ranked_problems(
    name: str, frame: pl.DataFrame, kto_include_neutral: bool
) -> list[tuple[tuple[int, int, str], str]]:
    """(rank, problem) of one dataset: ranks order the problems of several datasets as the
    checks run (episodes, chat shape per dataset, preference, kto, then outcomes by name)."""
    chats = list(CHATS)
    found = [((0, 0, ""), p) for p in (rlds_problems(frame) if name == "rl_steps" else [])]
    if name in CHATS:
        rank = (1, chats.index(name), "")
        found += [(rank, p) for p in chat_shape_problems(name, frame, *CHATS[name])]
    if name == "preference":
        found += [((2, 0, ""), p) for p in preference_problems(frame)]
    if name == "kto":
        kto = kto_label_problems(frame, include_neutral=kto_include_neutral)
        found += [((3, 0, ""), p) for p in kto]
    if name == "stepwise":
        found += [((3, 1, ""), p) for p in stepwise_problems(frame)]
    return found + [((4, 0, name), p) for p in outcome_sign_problems(name, frame)]


def _names(frame: pl.DataFrame, bad: pl.Expr) -> list:
    column = next((c for c in ROW_NAMES if c in frame.columns), None)
    rows = frame.with_row_index("_row").filter(bad)
    return rows[column or "_row"].head(EXAMPLES).to_list()


class Counted(str):
    """A problem counted over rows: its count and examples merge over files (n summed, the first
    examples kept)."""

    def __new__(cls, dataset: str, what: str, n: int, examples: list) -> Self:
        made = super().__new__(cls, f"{dataset}: {n} rows {what}, e.g. {examples[:EXAMPLES]}")
        made.dataset, made.what, made.n, made.examples = dataset, what, n, examples[:EXAMPLES]
        return made


# True while a release is checked file by file: a check found in no row is kept (count 0), so
# every file gives the checks in the same order and their merge keeps the order of the whole.
KEEP_EMPTY: ContextVar[bool] = ContextVar("KEEP_EMPTY", default=False)


def _problem(dataset: str, frame: pl.DataFrame, bad: pl.Expr, what: str) -> list[str]:
    n = frame.select(bad.fill_null(True).sum()).item()
    keep = n or KEEP_EMPTY.get()
    return [Counted(dataset, what, n, _names(frame, bad.fill_null(True)))] if keep else []


def _missing(dataset: str, frame: pl.DataFrame, columns: Iterable[str]) -> list[str]:
    missing = [c for c in columns if c not in frame.columns]
    return [f"{dataset}: lacks column(s) {missing}"] if missing else []


def rlds_problems(steps: pl.DataFrame) -> list[str]:
    """RLDS invariants per episode, over every split."""
    missing = _missing("rl_steps", steps, RLDS_COLUMNS)
    if missing:
        return missing
    flag = {c: pl.col(c).fill_null(False) for c in ("is_first", "is_last", "is_terminal")}
    step = pl.col("step")
    per_episode = steps.group_by("episode_id").agg(
        n=pl.len(),
        gaps=(step.min() != 0)
        | (step.max() != pl.len() - 1)
        | (step.n_unique() != pl.len())
        | step.is_null().any(),
        firsts=flag["is_first"].sum(),
        first_not_0=(flag["is_first"] & (step != 0)).any(),
        lasts=flag["is_last"].sum(),
        last_not_max=(flag["is_last"] & (step != step.max())).any(),
        terminal_not_last=(flag["is_terminal"] & ~flag["is_last"]).any(),
        terminal_discount=(flag["is_terminal"] & (pl.col("discount") != 0)).any(),
        splits=pl.col("split").n_unique(),
    )
    checks = {
        "steps not 0..n-1 (gaps, repeats or no step 0)": pl.col("gaps"),
        "without exactly one is_first, on step 0": (pl.col("firsts") != 1) | pl.col("first_not_0"),
        "without exactly one is_last, on the last step": (pl.col("lasts") != 1)
        | pl.col("last_not_max"),
        "with is_terminal before the last step": pl.col("terminal_not_last"),
        "with a terminal step whose discount is not 0": pl.col("terminal_discount"),
        "in more than one split": pl.col("splits") > 1,
    }
    problems = []
    for what, bad in checks.items():
        broken = per_episode.filter(bad).sort("episode_id")
        if broken.height:
            problems.append(
                f"rl_steps: {broken.height} episodes {what}, e.g. "
                f"{broken['episode_id'].head(EXAMPLES).to_list()}"
            )
    return problems


def _shape(conversation: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """Per message of each conversation: its role, and whether its text is missing (a null
    message has neither); the texts themselves are never copied."""
    return (
        conversation.list.eval(pl.element().struct.field("role")),
        conversation.list.eval(pl.element().struct.field("content").is_null()),
    )


def _conversation_shape(frame: pl.DataFrame, prompt: str | None, completion: str) -> pl.DataFrame:
    """`_shape` of each row's chat: the completion's messages, after the prompt's if any."""
    if prompt is None:
        role, no_text = _shape(pl.col(completion))
    else:
        prompt_role, prompt_no_text = _shape(pl.col(prompt).fill_null([]))
        role, no_text = _shape(pl.col(completion).fill_null([]))
        role, no_text = pl.concat_list(prompt_role, role), pl.concat_list(prompt_no_text, no_text)
    return frame.select(role=role, no_text=no_text)


def broken_chats(conversations: pl.Series) -> pl.Series:
    """Per conversation: True when a strict chat template would reject it (see the module doc); an
    empty or null list, or a null message, is broken too."""
    return _broken(_conversation_shape(pl.DataFrame({"chat": conversations}), None, "chat"))


def _broken(shapes: pl.DataFrame) -> pl.Series:
    role = pl.col("role")
    system = (role == SYSTEM).fill_null(False)
    turn = (~system).cast(pl.Int64).cum_sum().over("_row") - 1  # position among non-system messages
    expected = pl.when(pl.col("turn") % 2 == 0).then(pl.lit(USER)).otherwise(pl.lit(ASSISTANT))
    long = (
        shapes.with_row_index("_row")
        .explode(["role", "no_text"])
        .with_columns(system=system, position=pl.int_range(pl.len()).over("_row"), turn=turn)
    )
    bad_message = (
        pl.col("no_text").fill_null(True)
        | ~role.is_in([SYSTEM, USER, ASSISTANT]).fill_null(False)
        | (pl.col("system") & (pl.col("position") != 0))
        | (~pl.col("system") & (role != expected).fill_null(True))
    )
    per_row = long.group_by("_row", maintain_order=True).agg(
        bad=bad_message.any(), last=role.last(), turns=(~pl.col("system")).sum()
    )
    rows = pl.DataFrame({"_row": pl.int_range(shapes.height, dtype=pl.UInt32, eager=True)})
    judged = rows.join(per_row, on="_row", how="left", maintain_order="left")
    return judged.select(
        pl.col("bad").fill_null(True)
        | (pl.col("last") != ASSISTANT).fill_null(True)
        | (pl.col("turns") == 0)
    ).to_series()


def chat_shape_problems(
    dataset: str, frame: pl.DataFrame, prompt: str | None, completions: tuple[str, ...]
) -> list[str]:
    missing = _missing(dataset, frame, [c for c in (prompt, *completions) if c])
    if missing:
        return missing
    problems = []
    for completion in completions:
        bad = _broken(_conversation_shape(frame, prompt, completion))
        what = f"{prompt} + {completion}" if prompt else completion
        problems += _problem(
            dataset,
            frame.with_columns(_bad=bad),
            pl.col("_bad"),
            f"whose {what} is not one chat (system?, user, assistant, …, assistant)",
        )
    return problems


def preference_problems(pairs: pl.DataFrame) -> list[str]:
    problems = []
    if {"chosen_prompt_hash", "rejected_prompt_hash"} <= set(pairs.columns):
        differ = pl.col("chosen_prompt_hash") != pl.col(
            "rejected_prompt_hash"
        )  # null: not recorded
        problems += _problem(
            "preference",
            pairs,
            differ.fill_null(False),
            "whose chosen and rejected answer different prompts",
        )
    if {"reward_chosen", "reward_rejected"} <= set(pairs.columns):
        lower = pl.col("reward_chosen") < pl.col("reward_rejected")  # null: unknown reward
        problems += _problem(
            "preference",
            pairs,
            lower.fill_null(False),
            "preferring the answer with the lower known reward",
        )
    return problems


def kto_label_problems(rows: pl.DataFrame, *, include_neutral: bool) -> list[str]:
    missing = _missing("kto", rows, ("label", "reward"))
    if missing:
        return missing
    reward, label = pl.col("reward"), pl.col("label")
    problems = _problem(
        "kto", rows, reward.is_null(), "without a reward (the label cannot be its sign)"
    )
    problems += _problem("kto", rows, label.is_null(), "without a label")
    signed = (reward != 0) & (label != (reward > 0))
    problems += _problem(
        "kto", rows, signed.fill_null(False), "whose label is not the sign of the reward"
    )
    if include_neutral:
        problems += _problem(
            "kto",
            rows,
            ((reward == 0) & label).fill_null(False),
            "with reward 0 labelled desirable (neutral rows are labelled false)",
        )
    else:
        problems += _problem(
            "kto",
            rows,
            (reward == 0).fill_null(False),
            "with reward 0 (neutral rows are left out unless [release] kto_include_neutral)",
        )
    return problems


def stepwise_problems(rows: pl.DataFrame) -> list[str]:
    """What TRL's PRMTrainer needs of a stepwise row (it pairs completions[i] with labels[i])."""
    missing = _missing("stepwise", rows, ("prompt", "completions", "labels"))
    if missing:
        return missing
    if rows.schema["labels"] != pl.List(pl.Boolean):
        return [f"stepwise: labels are {rows.schema['labels']}, not a list of booleans"]
    completions, labels = pl.col("completions"), pl.col("labels")
    problems = _problem("stepwise", rows, pl.col("prompt").is_null(), "without a prompt")
    problems += _problem(
        "stepwise",
        rows,
        (completions.list.len() == 0) | (completions.list.len() != labels.list.len()),
        "whose completions and labels are not of equal, non-zero length",
    )
    empty = completions.list.eval((pl.element().fill_null("") == "").any()).list.first()
    problems += _problem("stepwise", rows, empty, "with a null or empty completion")
    problems += _problem(
        "stepwise",
        rows,
        labels.list.eval(pl.element().is_null().any()).list.first(),
        "with a null label",
    )
    return problems


def outcome_sign_problems(dataset: str, frame: pl.DataFrame) -> list[str]:
    """A reward whose sign contradicts the outcome it came from (`outcome_was_good`, where
    known)."""
    reward = next((c for c in ("reward", "outcome_reward") if c in frame.columns), None)
    if "outcome_was_good" not in frame.columns or reward is None:
        return []
    good, value = pl.col("outcome_was_good"), pl.col(reward)
    contradicts = (good & (value < 0)) | (~good & (value > 0))
    return _problem(
        dataset,
        frame,
        contradicts.fill_null(False),
        f"whose {reward} has the opposite sign of outcome_was_good",
    )
