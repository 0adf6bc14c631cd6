"""`decisions` dataset, and the decision prompts the kto / preference / rl_steps builders reuse.

A decision's prompt is what its actor saw (seed 004's model input): one system message holding
the system prompt of its identity and, under a `[decision context]` label, the ambient state, the
coordination snapshot and the companion suggestion the actor was shown (canonical JSON: sorted
keys, compact; the suggestion without `wasFollowed`, which is the label, not the input); then the
conversation history of its RAG context (each message prefixed by its speaker's name). Its
completion is a small JSON object, `{"action": ..., "response": ...}`, so a model learns the
choice (post / stay silent) and the text together.
"""

from __future__ import annotations

import orjson
import polars as pl

from pipelines.exports.datasets.common import MESSAGES, message, messages_text, rewards_by

DECISION_SOURCES = ("decision",)
_HISTORY = pl.List(pl.Struct({"role": pl.String, "content": pl.String, "name": pl.String}))
_CONTEXT = pl.Struct(
    {
        "rag_context": pl.Struct(
            {
                "identity": pl.Struct({"systemPrompt": pl.String}),
                "conversationHistory": _HISTORY,
            }
        ),
    }
)


# The parts of the context the prompt shows, in this order, with their labels, and the dataset's
# columns holding them (cut out of the context once, for both).
_CONTEXT_LINES = (
    ("ambient state", "ambient_state", "$.ambient_state"),
    ("coordination snapshot", "coordination_state", "$.coordination_snapshot"),
)
_STATES = [column for _, column, _ in _CONTEXT_LINES]
_NOT_SHOWN = (
    "wasFollowed",
    "was_followed",
)  # what the actor did with the suggestion: the label, not the input


def _shown_suggestions(texts: pl.Series) -> pl.Series:
    """Companion suggestion JSON → what the actor was shown: canonical JSON without
    `wasFollowed`."""
    out = []
    for text in texts.to_list():
        suggestion = orjson.loads(text) if text else None
        shown = (
            {k: v for k, v in suggestion.items() if k not in _NOT_SHOWN}
            if isinstance(suggestion, dict)
            else None
        )
        out.append(orjson.dumps(shown, option=orjson.OPT_SORT_KEYS).decode() if shown else None)
    return pl.Series(out, dtype=pl.String)


def shown_suggestion(attributes: pl.Expr) -> pl.Expr:
    return attributes.str.json_path_match("$.companion_suggestion").map_batches(
        _shown_suggestions, return_dtype=pl.String
    )


def _system_content(system_prompt: pl.Expr, suggestion: pl.Expr) -> pl.Expr:
    """System prompt, then the labelled decision context (null when there is neither), of a
    frame with the `_CONTEXT_LINES` columns."""
    lines = [pl.lit(f"{label}: ") + pl.col(column) for label, column, _ in _CONTEXT_LINES]
    lines.append(pl.lit("companion suggestion: ") + suggestion)
    block = pl.concat_str(lines, separator="\n", ignore_nulls=True)
    block = pl.when(block != "").then(pl.lit("[decision context]\n") + block)
    content = pl.concat_str([system_prompt, block], separator="\n\n", ignore_nulls=True)
    return pl.when(content != "").then(content)


# a context's decoded `rag_context` and the suggestion shown, while the prompts are built
_RAG, _SHOWN = "_rag_context", "_shown_suggestion"


def _decoded_rag(context: pl.Expr) -> pl.Expr:
    return context.str.json_decode(_CONTEXT).struct.field("rag_context")


def _prompt_from_context(rag: pl.Expr, suggestion: pl.Expr) -> pl.Expr:
    """A context's decoded `rag_context` (`_decoded_rag`) → messages: [system + decision
    context] + history (roles other than user/assistant become user)."""
    system = _system_content(rag.struct.field("identity").struct.field("systemPrompt"), suggestion)
    history = rag.struct.field("conversationHistory").list.eval(
        message(
            pl.when(pl.element().struct.field("role").is_in(["user", "assistant"]))
            .then(pl.element().struct.field("role"))
            .otherwise(pl.lit("user")),
            pl.when(pl.element().struct.field("name").is_not_null())
            .then(
                pl.concat_str(
                    pl.element().struct.field("name"),
                    pl.lit(": "),
                    pl.element().struct.field("content").fill_null(""),
                )
            )
            .otherwise(pl.element().struct.field("content").fill_null("")),
        )
    )
    head = (
        pl.when(system.is_not_null())
        .then(pl.concat_list(message("system", system)))
        .otherwise(pl.lit([], dtype=MESSAGES))
    )
    return pl.concat_list(head, history.fill_null(pl.lit([], dtype=MESSAGES))).cast(MESSAGES)


def _outcomes(feedback: pl.DataFrame) -> pl.DataFrame:
    """Per decision: the source's own wasGoodDecision (null without one) and whether any outcome
    was recorded."""
    signals = feedback.filter(
        (pl.col("target") == "decision") & pl.col("name").is_in(["rating", "was_good_decision"])
    )
    verdict = pl.col("value_num").filter(pl.col("name") == "was_good_decision").first()
    return signals.group_by("decision_id").agg(
        outcome_was_good=verdict.cast(pl.Boolean), has_outcome=pl.lit(True)
    )


def completion_json(action: pl.Expr, response: pl.Expr | None = None) -> pl.Expr:
    """The assistant's side of a decision as JSON text (response omitted for action-only
    comparisons)."""
    fields = [action.alias("action")] + (
        [response.alias("response")] if response is not None else []
    )
    return pl.struct(*fields).struct.json_encode()


_SHARED = (
    "_decision_prompts"  # key under which `with_decision_prompts` keeps them for every builder
)


def with_decision_prompts(
    silver: dict[str, pl.DataFrame], gold: dict[str, pl.DataFrame]
) -> dict[str, pl.DataFrame]:
    """`silver` plus the decision prompts, built once: four builders use them, and decoding every
    context is the costliest step of building the datasets (≈ 2.7 s per pass at 1 GB of raw
    logs)."""
    return silver | {_SHARED: decision_prompts(silver, gold)}


def decision_prompts(
    silver: dict[str, pl.DataFrame], gold: dict[str, pl.DataFrame]
) -> pl.DataFrame:
    """One row per decision of the decision source: context, prompt, completion text, reward
    provenance."""
    if _SHARED in silver:
        return silver[_SHARED]
    episodes = (
        silver["episodes"].filter(pl.col("source").is_in(DECISION_SOURCES)).select("episode_id")
    )
    decisions = silver["decisions"].join(episodes, on="episode_id")
    turns = silver["turns"].select("turn_id", pl.col("text").alias("response"))
    contexts = silver["contexts"].select("context_hash", "context")
    rewards = rewards_by(gold["turn_rewards"], "decision_id", ("decision",))
    out = (
        decisions.join(contexts, on="context_hash", how="left")
        .join(turns, on="turn_id", how="left")
        .join(rewards, on="decision_id", how="left")
        .join(_outcomes(silver["feedback"]), on="decision_id", how="left")
    )
    states = {
        column: pl.col("context").str.json_path_match(path) for _, column, path in _CONTEXT_LINES
    }
    # the context decoded and the suggestion cut out in a step of their own: the prompt reads
    # the context twice (system prompt and history), and an eager frame's expressions share no
    # work; a Python function inside the prompt's expression cost it more than its own time
    out = out.with_columns(**{_SHOWN: shown_suggestion(pl.col("attributes"))})
    out = out.with_columns(**states, **{_RAG: _decoded_rag(pl.col("context"))}).with_columns(
        has_outcome=pl.col("has_outcome").fill_null(False),
        prompt=_prompt_from_context(pl.col(_RAG), pl.col(_SHOWN)),
        completion_text=completion_json(pl.col("action"), pl.col("response")),
    )
    out = out.drop(_RAG, _SHOWN)
    # the states after the prompt and completion, where the frame has always had them
    return out.select(pl.exclude(_STATES), *_STATES).with_columns(
        _prompt_text=messages_text("prompt")
    )


def build_decisions(silver: dict[str, pl.DataFrame], gold: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """The `decisions` dataset: context (and its hash), ambient / coordination state → action,
    confidence, outcome (gold reward with rule and feedback ids; null while unrated or
    unreadable) and the source's own wasGoodDecision (`outcome_was_good`), against which a
    reward's sign can be checked."""
    rows = decision_prompts(silver, gold)
    return rows.select(
        "episode_id",
        "decision_id",
        "turn_id",
        "actor_id",
        "actor_type",
        "ts",
        "context_hash",
        "context",
        "ambient_state",
        "coordination_state",
        "prompt",
        "action",
        "response",
        "confidence",
        "reasoning",
        "candidates",
        "suggested_action",
        "suggestion_followed",
        pl.col("reward").alias("outcome_reward"),
        "outcome_was_good",
        "reward_rule",
        "feedback_ids",
        "_prompt_text",
    )
