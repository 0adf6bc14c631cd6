"""quality_signals: automatic per-turn signals from text and timestamps (no model, no feedback).

Lexicons and the JSON-request pattern come from the `[quality]` section of rewards.toml.

Where the source itself says what a turn is, its word wins over the text heuristics: a turn whose
attributes carry `source_correction` / `new_strategic_context` (scenario signals and labels) takes
that as `is_correction` / `is_new_context`; a turn whose attributes carry `response_seconds_basis`
takes `response_seconds` from its attributes (e.g. the scenario user's decision time; null when
the basis is `unknown`) instead of the gap between timestamps.

The correction lexicon is a weak signal, never evidence for a preference pair: strong terms
(`correction_terms`) count unless inside a denial (`correction_exclusions`: "no corrections",
"nothing wrong"); hedges (`correction_hedges`: "actually") count only in a sentence that also
negates or contrasts (`contrast_terms`, or a word ending in n't) — "Actually, it is 900M, not 850M"
is a correction, "This is actually great" is not.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import orjson
import polars as pl

from pipelines.gold.common import may_name_key
from pipelines.schemas import conform, polars_schema
from pipelines.schemas.gold import QualitySignals

WORD = r"[\p{L}\p{N}']+"
FENCE = re.compile(r"^```[a-zA-Z]*\s*(.*?)\s*```$", re.DOTALL)


def lexicon_pattern(terms: Iterable[str]) -> str:
    """Whole-word (or whole-phrase), case-insensitive alternation of the terms."""
    escaped = [
        r"\s+".join(re.escape(word) for word in term.split()) for term in terms if term.strip()
    ]
    return r"(?i)\b(?:" + "|".join(escaped) + r")\b" if escaped else r"a\A"  # a\A never matches


def correction_pattern(params: Mapping[str, Any], text: pl.Expr | None = None) -> pl.Expr:
    """Lexicon test of `text` (default `pl.col("text")`) for a correction (see the module
    docstring)."""
    text = (pl.col("text") if text is None else text).fill_null("")
    exclusions = params.get("correction_exclusions", [])
    if exclusions:
        text = text.str.replace_all(lexicon_pattern(exclusions), " ")
    strong = text.str.contains(lexicon_pattern(params["correction_terms"]))
    hedges = [t for t in params.get("correction_hedges", []) if t.strip()]
    if not hedges:
        return strong
    hedge = lexicon_pattern(hedges).removeprefix("(?i)")
    contrast = lexicon_pattern(params.get("contrast_terms", [])).removeprefix("(?i)")
    contrast = f"(?:{contrast}|\\b\\p{{L}}+n['’]t\\b)"
    same_sentence = r"[^.!?\n]*"
    hedged = text.str.contains(
        f"(?i){hedge}{same_sentence}{contrast}|{contrast}{same_sentence}{hedge}"
    )
    return strong | hedged


def _attribute(path: str, where: pl.Expr | None = None) -> pl.Expr:
    """A top-level attribute as text, read only from the rows (of `where`) whose attributes name
    it: most turns have none of these keys, and parsing every turn's attributes (195 MB at 1 GB)
    once per key was a third of the signals' cost."""
    named = may_name_key(path) if where is None else may_name_key(path) & where
    return pl.when(named).then(pl.col("attributes")).str.json_path_match(f"$.{path}")


def _source_flag(path: str, where: pl.Expr) -> pl.Expr:
    # one lookup: an expression named twice in an eager frame's `with_columns` is computed twice
    flags = {"true": True, "false": False}
    return _attribute(path, where).replace_strict(flags, default=None, return_dtype=pl.Boolean)


def is_json_document(text: str | None) -> bool | None:
    """Text (optionally inside one ``` fence) is a JSON object or array."""
    if text is None:
        return None
    body = text.strip()
    fenced = FENCE.match(body)
    if fenced:
        body = fenced.group(1)
    try:
        return isinstance(orjson.loads(body), (dict, list))
    except orjson.JSONDecodeError:
        return False


def _words(text: pl.Expr) -> pl.Expr:
    return text.fill_null("").str.to_lowercase().str.extract_all(WORD)


def build_quality_signals(turns: pl.DataFrame, params: Mapping[str, Any]) -> pl.DataFrame:
    roles = list(params.get("lexicon_roles", ["user"]))
    scanned = pl.col("role").is_in(roles)
    request = "(?i)" + params["json_request_pattern"]
    ordered = turns.sort("episode_id", "turn_index")
    by_episode = "episode_id"
    frame = ordered.with_columns(
        # The latest user turn before this one (the prompt an assistant turn answers).
        prompt=pl.when(pl.col("role") == "user").then(pl.col("text")).shift(1).over(by_episode),
        prompt_seen=pl.when(pl.col("role") == "user").then(pl.lit(True)).shift(1).over(by_episode),
        elapsed=(pl.col("ts") - pl.col("ts").shift(1).over(by_episode)).dt.total_microseconds()
        / 1e6,
    ).with_columns(
        # forward_fill inside each episode: carry the last user text to the following turns.
        prompt=pl.col("prompt").forward_fill().over(by_episode),
        prompt_seen=pl.col("prompt_seen").forward_fill().over(by_episode).fill_null(False),
    )
    is_answer = (pl.col("role") == "assistant") & pl.col("prompt_seen")
    text = pl.when(scanned).then(pl.col("text"))
    # Each answer's distinct words and its prompt's, as columns: used thrice by the echo rate, an
    # expression would be computed thrice; read from the answers' texts only.
    frame = frame.with_columns(
        _reply=_words(pl.when(is_answer).then(pl.col("text"))).list.unique(),
        _prompt=_words(pl.when(is_answer).then(pl.col("prompt"))).list.unique(),
    )
    frame = frame.with_columns(
        word_count=pl.col("text").fill_null("").str.count_matches(WORD).cast(pl.Int64),
        response_seconds=pl.when(_attribute("response_seconds_basis").is_not_null())
        .then(_attribute("response_seconds").cast(pl.Float64, strict=False))
        # Clock skew or reordered logs give negative gaps: no latency rather than a wrong one.
        .when(pl.col("elapsed") >= 0)
        .then(pl.col("elapsed")),
        # the lexicons read the scanned turns' texts only (`when` computes its branch on every row)
        is_correction=pl.when(scanned).then(
            pl.coalesce(
                _source_flag("source_correction", scanned), correction_pattern(params, text)
            )
        ),
        is_new_context=pl.when(scanned).then(
            pl.coalesce(
                _source_flag("new_strategic_context", scanned),
                text.fill_null("").str.contains(lexicon_pattern(params["new_context_terms"])),
            )
        ),
        json_requested=(is_answer & pl.col("prompt").fill_null("").str.contains(request)),
        echo_rate=pl.when(is_answer).then(_echo_rate()),
    )
    frame = frame.with_columns(
        # Only the few JSON-requested answers are parsed, in Python (Polars has no lenient JSON
        # test): the text is masked before the call, since `when/then` evaluates its branch on
        # every row once any row is requested.
        json_valid=pl.when(pl.col("json_requested"))
        .then(pl.col("text"))
        .map_elements(is_json_document, return_dtype=pl.Boolean, skip_nulls=True)
    )
    keep = list(polars_schema(QualitySignals))
    return conform(frame.select(keep), polars_schema(QualitySignals)).collect()


def _echo_rate() -> pl.Expr:
    """Share of an answer's distinct words found in its prompt (columns `_reply`, `_prompt`:
    their distinct words)."""
    n_reply = pl.col("_reply").list.len()
    shared = pl.col("_reply").list.set_intersection(pl.col("_prompt")).list.len()
    return pl.when(n_reply > 0).then(shared / n_reply)
