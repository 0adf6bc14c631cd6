"""decision bronze → silver: episodes, turns, decisions, contexts, feedback, quarantine.

Cross-file work happens here: a decision exported to JSONL and also kept in the SQLite
database is one decision. Identical copies collapse; differing copies keep the one with an
outcome, then the one from the later file (path order), and quarantine the others.

Split unit: a human actor can decide in several sessions, so `group_id` is the set of sessions
linked by a shared human actor, named after its earliest session (a session alone: itself).

Rating scale (DESIGN §3): `outcome.rating` is on 0–1 or 1–5, and a rating of exactly 1 is the top of
one and the bottom of the other. Each rating row of `feedback` records the scale settled by evidence
and how (`attributes.scale_evidence`), and whether it can be read as a reward (`attributes.reading`);
see `ratings.settle_rating_scales`. Feedback signals: `feedback.feedback_signals`.
"""

from __future__ import annotations

import orjson
import polars as pl

from pipelines.config.settings import Settings
from pipelines.schemas.silver import CANDIDATE
from pipelines.sources.base import content_hash
from pipelines.transforms.decision.feedback import feedback_signals
from pipelines.transforms.decision.ratings import settle_rating_scales
from pipelines.transforms.groups import person_components

__all__ = ["reconcile_copies", "to_silver"]

SOURCE = "decision"
TABLE = "decision_records"

# Where a record was stored, not what it says: two copies differing only here are identical.
_STORAGE_COLUMNS = ("file", "locator", "ordinal", "file_kind", "rag_context_encoding", "extra")
_CONTEXT_PARTS = ("ambient_state", "coordination_snapshot", "rag_context", "visual_context")


def to_silver(
    bronze: dict[str, pl.LazyFrame], settings: Settings
) -> dict[str, pl.DataFrame | pl.LazyFrame]:
    records = bronze[TABLE].collect()
    kept, conflicts = reconcile_copies(records)
    decisions = settle_rating_scales(_with_derived_columns(kept), settings)
    turns = _turns(decisions)
    decisions = decisions.join(turns.select("decision_id", "turn_id"), on="decision_id", how="left")
    return {
        "episodes": _episodes(decisions, turns),
        "turns": turns.drop("decision_id"),
        "decisions": _decisions(decisions),
        "contexts": _contexts(decisions),
        "feedback": feedback_signals(decisions),
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
    losers = ranked.filter(
        ~pl.col("_is_winner") & (pl.col("_content_key") != pl.col("_winner_key"))
    )
    return kept, _conflict_rows(losers)


def _conflict_rows(losers: pl.DataFrame) -> pl.DataFrame:
    reason = (
        pl.when(pl.col("_winner_rated") & ~pl.col("_has_outcome"))
        .then(pl.lit("it has an outcome and this copy does not"))
        .otherwise(pl.lit("it comes from a later file"))
    )
    message = pl.format(
        "decision {} has a different copy in {} ({}); kept that copy because {}",
        "decision_id",
        "_winner_file",
        "_winner_locator",
        reason,
    )
    raw = pl.struct(
        "decision_id", "action", "confidence", "outcome", pl.col("ts").dt.to_string()
    ).struct.json_encode()
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
        lambda s: pl.Series(
            [None if v is None else orjson.dumps(v).decode() for v in s], dtype=pl.String
        ),
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
        pl.when(raw.is_in(["human", "user"]))
        .then(pl.lit("human"))
        .when(raw.str.contains("ai|persona|agent|bot"))
        .then(pl.lit("ai"))
        .otherwise(raw)
    )


def _dataset() -> pl.Expr:
    """The dataset of a decision: the first folder under `decisions/` (none for a file directly in it)."""
    parts = pl.col("file").str.split("/")
    return pl.when(parts.list.len() > 2).then(parts.list.get(1, null_on_oob=True))


def _normalized_action(column: str) -> pl.Expr:
    return pl.col(column).str.strip_chars().str.to_lowercase()


def _suggestion_followed() -> pl.Expr:
    """The source's own `wasFollowed` where it has one; else the actions compared case-insensitively, trimmed."""
    same = _normalized_action("action") == _normalized_action("suggested_action")
    return pl.coalesce(pl.col("was_followed"), same)


def _suggestion_followed_from() -> pl.Expr:
    return (
        pl.when(pl.col("was_followed").is_not_null())
        .then(pl.lit("was_followed"))
        .when(pl.col("suggested_action").is_not_null())
        .then(pl.lit("actions"))
    )


def _candidates(rows: pl.Series) -> pl.Series:
    """Chosen action (its confidence) + each alternative (its `value`, else its `confidence`), when every
    alternative carries a number; else null (the alternatives stay in `attributes`)."""
    out = []
    for row in rows.to_list():
        alternatives = orjson.loads(row["alternatives"]) if row["alternatives"] else []
        values = [_first_number(a.get("value"), a.get("confidence")) for a in alternatives]
        if not alternatives or any(v is None for v in values):
            out.append(None)
            continue
        chosen = [{"action": row["action"], "value": row["confidence"]}]
        out.append(
            chosen
            + [
                {"action": str(a["action"]), "value": v}
                for a, v in zip(alternatives, values, strict=True)
            ]
        )
    return pl.Series(out, dtype=CANDIDATE)


def _first_number(*values: object) -> float | None:
    for value in values:
        if value is not None and value != "":
            return float(value)  # the adapter checked that it is a number
    return None


def _with_derived_columns(kept: pl.DataFrame) -> pl.DataFrame:
    return kept.with_columns(
        episode_id=pl.lit(f"{SOURCE}:") + pl.col("session_id"),
        actor_kind=_actor_kind(),
        dataset=_dataset(),
        context=_full_context(),
        prompt_context=_json_string(pl.col("system_prompt")),
        suggestion_followed=_suggestion_followed(),
        suggestion_followed_from=_suggestion_followed_from(),
        candidates=pl.struct("action", "confidence", "alternatives").map_batches(
            _candidates, return_dtype=CANDIDATE
        ),
    ).with_columns(
        context_hash=_sha256_of(pl.col("context")),
        system_prompt_hash=_sha256_of(pl.col("prompt_context")),
    )


# ---------------------------------------------------------------- silver tables


def _turns(decisions: pl.DataFrame) -> pl.DataFrame:
    posted = decisions.filter(pl.col("response_content").str.len_chars() > 0)
    posted = posted.sort(["episode_id", "ts", "sequence_number", "decision_id"], nulls_last=True)
    return posted.select(
        turn_id=pl.col("episode_id")
        + "#"
        + pl.int_range(pl.len()).over("episode_id").cast(pl.String),
        episode_id="episode_id",
        turn_index=pl.int_range(pl.len(), dtype=pl.Int64).over("episode_id"),
        role=pl.when(pl.col("actor_kind") == "human")
        .then(pl.lit("user"))
        .otherwise(pl.lit("assistant")),
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
        "system_prompt_hash",
        native_actor_type="actor_type",
        actor_name="actor_name",
        domain="domain",
        trigger_event_id="trigger_event_id",
        context_id="context_id",
        sequence_number="sequence_number",
        model_used="model_used",
        decision_details="decision_details",
        companion_suggestion="companion_suggestion",
        metadata="metadata",
        rag_context_encoding="rag_context_encoding",
        source_file="file",
        locator="locator",
        file_kind="file_kind",
        extra="extra",
        dataset="dataset",
        suggestion_followed_from="suggestion_followed_from",
        alternatives="alternatives",
        consensus="consensus",
        follow_up="follow_up",
        long_term_outcome="long_term_outcome",
    ).struct.json_encode()
    return decisions.select(
        "decision_id",
        "episode_id",
        "turn_id",
        "actor_id",
        actor_type="actor_kind",
        action="action",
        candidates="candidates",
        confidence="confidence",
        reasoning="reasoning",
        context_hash="context_hash",
        suggested_action="suggested_action",
        suggestion_followed="suggestion_followed",
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
    grouped = (
        decisions.sort("file", "ordinal")
        .group_by("episode_id", maintain_order=True)
        .agg(
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
    )
    return (
        grouped.join(turn_counts, on="episode_id", how="left")
        .join(_human_groups(decisions), on="episode_id", how="left")
        .select(
            "episode_id",
            source=pl.lit(SOURCE),
            native_id="native_id",
            group_id=pl.coalesce("human_group", "episode_id"),
            started_at="started_at",
            ended_at="ended_at",
            n_turns=pl.col("n_turns").fill_null(0),
            end_reason=pl.lit(None, pl.String),
            attributes=pl.struct(
                "n_decisions", "n_rated", "actor_ids", "domains", "files"
            ).struct.json_encode(),
            source_file="source_file",
        )
        .sort("episode_id")
    )


def _human_groups(decisions: pl.DataFrame) -> pl.DataFrame:
    """episode_id → human_group: sessions linked by a shared human actor form one split unit."""
    units = (
        decisions.group_by("episode_id")
        .agg(started_at=pl.col("ts").min())
        .rename({"episode_id": "unit"})
    )
    links = decisions.filter((pl.col("actor_kind") == "human") & pl.col("actor_id").is_not_null())
    components = person_components(units, links.select(unit="episode_id", person="actor_id"))
    return components.select(episode_id="unit", human_group="group")
