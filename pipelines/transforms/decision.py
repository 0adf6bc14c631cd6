"""decision bronze → silver: episodes, turns, decisions, contexts, feedback, quarantine.

Cross-file work happens here: a decision exported to JSONL and also kept in the SQLite
database is one decision. Identical copies collapse; differing copies keep the one with an
outcome, then the one from the later file (path order), and quarantine the others.

Split unit: a human actor can decide in several sessions, so `group_id` is the set of sessions
linked by a shared human actor, named after its earliest session (a session alone: itself).
"""

from __future__ import annotations

import orjson
import polars as pl

from pipelines.config import Settings
from pipelines.sources.base import content_hash, stable_hash
from pipelines.transforms.groups import person_components

SOURCE = "decision"
TABLE = "decision_records"

# Where a record was stored, not what it says: two copies differing only here are identical.
_STORAGE_COLUMNS = ("file", "locator", "ordinal", "file_kind", "rag_context_encoding", "extra")
_CONTEXT_PARTS = ("ambient_state", "coordination_snapshot", "rag_context", "visual_context")
_RATED_BY_KIND = {"user": "human", "community": "human", "human": "human", "self": "self", "system": "system"}


def to_silver(bronze: dict[str, pl.LazyFrame], settings: Settings) -> dict[str, pl.DataFrame | pl.LazyFrame]:
    records = bronze[TABLE].collect()
    kept, conflicts = reconcile_copies(records)
    decisions = _with_derived_columns(kept)
    turns = _turns(decisions)
    decisions = decisions.join(turns.select("decision_id", "turn_id"), on="decision_id", how="left")
    return {
        "episodes": _episodes(decisions, turns),
        "turns": turns.drop("decision_id"),
        "decisions": _decisions(decisions),
        "contexts": _contexts(decisions),
        "feedback": _feedback(decisions),
        "quarantine": conflicts,
    }


# ---------------------------------------------------------------- dedup across files


def reconcile_copies(records: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """One row per decision_id, plus silver quarantine rows for copies that disagree with it."""
    content = [c for c in records.columns if c not in _STORAGE_COLUMNS]
    ranked = records.with_columns(
        _content_key=pl.struct(content).hash(),
        _has_outcome=pl.col("outcome").is_not_null(),
    ).sort(["decision_id", "_has_outcome", "file", "ordinal"], descending=[False, True, True, True])
    ranked = ranked.with_columns(
        _is_winner=pl.int_range(pl.len()).over("decision_id") == 0,
        _winner_key=pl.col("_content_key").first().over("decision_id"),
        _winner_file=pl.col("file").first().over("decision_id"),
        _winner_locator=pl.col("locator").first().over("decision_id"),
        _winner_rated=pl.col("_has_outcome").first().over("decision_id"),
    )
    kept = ranked.filter("_is_winner").drop(pl.selectors.starts_with("_"))
    losers = ranked.filter(~pl.col("_is_winner") & (pl.col("_content_key") != pl.col("_winner_key")))
    return kept, _conflict_rows(losers)


def _conflict_rows(losers: pl.DataFrame) -> pl.DataFrame:
    reason = (
        pl.when(pl.col("_winner_rated") & ~pl.col("_has_outcome"))
        .then(pl.lit("it has an outcome and this copy does not"))
        .otherwise(pl.lit("it comes from a later file"))
    )
    message = pl.format(
        "decision {} has a different copy in {} ({}); kept that copy because {}",
        "decision_id", "_winner_file", "_winner_locator", reason,
    )
    raw = pl.struct("decision_id", "action", "confidence", "outcome", pl.col("ts").dt.to_string()).struct.json_encode()
    return losers.select(
        source=pl.lit(SOURCE),
        file="file",
        locator="locator",
        error_kind=pl.lit("duplicate_conflict"),
        message=message,
        raw=raw,
        stage=pl.lit("silver"),
        run_id=pl.lit(None, pl.String),
    )


# ---------------------------------------------------------------- per-decision derived columns


def _sha256_of(expr: pl.Expr) -> pl.Expr:
    return expr.map_batches(
        lambda s: pl.Series([None if v is None else content_hash(v) for v in s], dtype=pl.String),
        return_dtype=pl.String,
    )


def _json_string(expr: pl.Expr) -> pl.Expr:
    """A text value as a JSON string literal (how a lone system prompt is stored in `contexts`)."""
    return expr.map_batches(
        lambda s: pl.Series([None if v is None else orjson.dumps(v).decode() for v in s], dtype=pl.String),
        return_dtype=pl.String,
    )


def _full_context() -> pl.Expr:
    # Each part is already canonical JSON (sorted keys, compact), so this equals dumps({...}).
    pieces: list[pl.Expr | str] = []
    for i, part in enumerate(_CONTEXT_PARTS):
        pieces += [("{" if i == 0 else ",") + f'"{part}":', pl.col(part).fill_null("null")]
    text = pl.concat_str([pl.lit(p) if isinstance(p, str) else p for p in pieces] + [pl.lit("}")])
    all_missing = pl.all_horizontal([pl.col(p).is_null() for p in _CONTEXT_PARTS])
    return pl.when(all_missing).then(pl.lit(None, pl.String)).otherwise(text)


def _actor_kind() -> pl.Expr:
    raw = pl.col("actor_type").str.to_lowercase()
    return (
        pl.when(raw.is_in(["human", "user"])).then(pl.lit("human"))
        .when(raw.str.contains("ai|persona|agent|bot")).then(pl.lit("ai"))
        .otherwise(raw)
    )


def _with_derived_columns(kept: pl.DataFrame) -> pl.DataFrame:
    return kept.with_columns(
        episode_id=pl.lit(f"{SOURCE}:") + pl.col("session_id"),
        actor_kind=_actor_kind(),
        context=_full_context(),
        prompt_context=_json_string(pl.col("system_prompt")),
    ).with_columns(
        context_hash=_sha256_of(pl.col("context")),
        system_prompt_hash=_sha256_of(pl.col("prompt_context")),
    )


# ---------------------------------------------------------------- silver tables


def _turns(decisions: pl.DataFrame) -> pl.DataFrame:
    posted = decisions.filter(pl.col("response_content").str.len_chars() > 0)
    posted = posted.sort(["episode_id", "ts", "sequence_number", "decision_id"], nulls_last=True)
    return posted.select(
        turn_id=pl.col("episode_id") + "#" + pl.int_range(pl.len()).over("episode_id").cast(pl.String),
        episode_id="episode_id",
        turn_index=pl.int_range(pl.len(), dtype=pl.Int64).over("episode_id"),
        role=pl.when(pl.col("actor_kind") == "human").then(pl.lit("user")).otherwise(pl.lit("assistant")),
        native_role="actor_type",
        actor_id="actor_id",
        text="response_content",
        ts="ts",
        internal=pl.lit(False),
        attributes=pl.struct("decision_id", "actor_name", "action").struct.json_encode(),
        decision_id="decision_id",
    )


def _decisions(decisions: pl.DataFrame) -> pl.DataFrame:
    attributes = pl.struct(
        "system_prompt_hash", native_actor_type="actor_type", actor_name="actor_name", domain="domain",
        trigger_event_id="trigger_event_id", context_id="context_id", sequence_number="sequence_number",
        model_used="model_used", decision_details="decision_details", companion_suggestion="companion_suggestion",
        metadata="metadata", rag_context_encoding="rag_context_encoding", source_file="file",
        locator="locator", file_kind="file_kind", extra="extra",
    ).struct.json_encode()
    return decisions.select(
        "decision_id", "episode_id", "turn_id", "actor_id",
        actor_type="actor_kind",
        action="action",
        confidence="confidence",
        reasoning="reasoning",
        context_hash="context_hash",
        suggested_action="suggested_action",
        suggestion_followed=pl.when(pl.col("suggested_action").is_not_null())
        .then(pl.col("action") == pl.col("suggested_action")),
        ts="ts",
        attributes=attributes,
    )


def _contexts(decisions: pl.DataFrame) -> pl.DataFrame:
    full = decisions.select("context_hash", "context")
    prompts = decisions.select(context_hash="system_prompt_hash", context="prompt_context")
    return (
        pl.concat([full, prompts])
        .drop_nulls("context_hash")
        .unique("context_hash", keep="first", maintain_order=True)
        .with_columns(n_bytes=pl.col("context").str.len_bytes().cast(pl.Int64))
    )


def _episodes(decisions: pl.DataFrame, turns: pl.DataFrame) -> pl.DataFrame:
    turn_counts = turns.group_by("episode_id").agg(n_turns=pl.len().cast(pl.Int64))
    grouped = decisions.sort("file", "ordinal").group_by("episode_id", maintain_order=True).agg(
        native_id=pl.col("session_id").first(),
        started_at=pl.col("ts").min(),
        ended_at=pl.col("ts").max(),
        source_file=pl.col("file").first(),
        n_decisions=pl.len(),
        n_rated=pl.col("outcome").is_not_null().sum(),
        actor_ids=pl.col("actor_id").drop_nulls().unique().sort(),
        domains=pl.col("domain").drop_nulls().unique().sort(),
        files=pl.col("file").unique().sort(),
    )
    return grouped.join(turn_counts, on="episode_id", how="left").join(
        _human_groups(decisions), on="episode_id", how="left"
    ).select(
        "episode_id",
        source=pl.lit(SOURCE),
        native_id="native_id",
        group_id=pl.coalesce("human_group", "episode_id"),
        started_at="started_at",
        ended_at="ended_at",
        n_turns=pl.col("n_turns").fill_null(0),
        end_reason=pl.lit(None, pl.String),
        attributes=pl.struct("n_decisions", "n_rated", "actor_ids", "domains", "files").struct.json_encode(),
        source_file="source_file",
    ).sort("episode_id")


def _human_groups(decisions: pl.DataFrame) -> pl.DataFrame:
    """episode_id → human_group: sessions linked by a shared human actor form one split unit."""
    units = decisions.group_by("episode_id").agg(started_at=pl.col("ts").min()).rename({"episode_id": "unit"})
    links = decisions.filter((pl.col("actor_kind") == "human") & pl.col("actor_id").is_not_null())
    components = person_components(units, links.select(unit="episode_id", person="actor_id"))
    return components.select(episode_id="unit", human_group="group")


# ---------------------------------------------------------------- feedback


def _rated_by_kind() -> pl.Expr:
    return pl.col("outcome_rated_by").str.to_lowercase().replace_strict(
        _RATED_BY_KIND, default="outcome", return_dtype=pl.String
    )


def _signal(frame: pl.DataFrame, name: str, value_num: pl.Expr, value_text: pl.Expr, scale: pl.Expr,
            source_kind: pl.Expr, observed_at: pl.Expr, attributes: pl.Expr) -> pl.DataFrame:
    return frame.select(
        "episode_id", "decision_id",
        target=pl.lit("decision"),
        name=pl.lit(name),
        value_num=value_num.cast(pl.Float64),
        value_text=value_text.cast(pl.String),
        scale=scale,
        source_kind=source_kind,
        observed_at=observed_at,
        attributes=attributes.struct.json_encode(),
    )


def _feedback(decisions: pl.DataFrame) -> pl.DataFrame:
    rated = decisions.filter(pl.col("outcome_rating").is_not_null())
    judged = decisions.filter(pl.col("outcome_was_good").is_not_null())
    overridden = decisions.filter(
        pl.col("suggested_action").is_not_null()
        & (pl.col("actor_kind") == "human")
        & (pl.col("action") != pl.col("suggested_action"))
    )
    rating = pl.col("outcome_rating")
    signals = pl.concat([
        _signal(rated, "rating", rating, pl.lit(None), pl.when(rating <= 1).then(pl.lit("[0,1]")).otherwise(pl.lit("1-5")),
                _rated_by_kind(), pl.col("outcome_rated_at"),
                pl.struct(ambiguous_scale=rating == 1.0, rated_by="outcome_rated_by", outcome="outcome")),
        _signal(judged, "was_good_decision", pl.col("outcome_was_good"), pl.col("outcome_was_good").cast(pl.String),
                pl.lit("bool"), _rated_by_kind(), pl.col("outcome_rated_at"),
                pl.struct(rated_by="outcome_rated_by", outcome="outcome")),
        _signal(overridden, "suggestion_overridden", pl.lit(1.0), pl.lit("true"), pl.lit("bool"), pl.lit("human"),
                pl.col("ts"), pl.struct("suggested_action", "action", "companion_suggestion")),
    ])
    feedback_id = pl.struct("target", "decision_id", "name", "value_num", "value_text").map_batches(
        lambda s: pl.Series([stable_hash(*row.values()) for row in s.to_list()], dtype=pl.String),
        return_dtype=pl.String,
    )
    return signals.with_columns(feedback_id=feedback_id, turn_id=pl.lit(None, pl.String))
