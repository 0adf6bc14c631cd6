"""decision bronze → silver: episodes, turns, decisions, contexts, feedback, quarantine.

Cross-file work happens here: a decision exported to JSONL and also kept in the SQLite
database is one decision. Identical copies collapse; differing copies keep the one with an
outcome, then the one from the later file (path order), and quarantine the others.

Split unit: a human actor can decide in several sessions, so `group_id` is the set of sessions
linked by a shared human actor, named after its earliest session (a session alone: itself).

Rating scale (DESIGN §3): `outcome.rating` is on 0–1 or 1–5, and a rating of exactly 1 is the top of
one and the bottom of the other. Each rating row of `feedback` records the scale settled by evidence
and how (`attributes.scale_evidence`), and whether it can be read as a reward (`attributes.reading`);
see `settle_rating_scales`.
"""

from __future__ import annotations

import orjson
import polars as pl

from pipelines.config import Settings
from pipelines.schemas.silver import CANDIDATE
from pipelines.sources.base import content_hash, stable_hash
from pipelines.transforms.groups import person_components

SOURCE = "decision"
TABLE = "decision_records"

# Where a record was stored, not what it says: two copies differing only here are identical.
_STORAGE_COLUMNS = ("file", "locator", "ordinal", "file_kind", "rag_context_encoding", "extra")
_CONTEXT_PARTS = ("ambient_state", "coordination_snapshot", "rag_context", "visual_context")
_RATED_BY_KIND = {"user": "human", "community": "human", "human": "human", "self": "self", "system": "system"}
# turnlake.toml `[decision.rating_scale]` values → the `feedback.scale` labels.
_SCALE_LABELS = {"0-1": "[0,1]", "1-5": "1-5"}
UNKNOWN_SCALE = "unknown"
_FOLLOW_UPS = ("follow_up_conversation_continued", "follow_up_mistake_corrected")


def to_silver(bronze: dict[str, pl.LazyFrame], settings: Settings) -> dict[str, pl.DataFrame | pl.LazyFrame]:
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
        pl.when(pl.col("was_followed").is_not_null()).then(pl.lit("was_followed"))
        .when(pl.col("suggested_action").is_not_null()).then(pl.lit("actions"))
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
        out.append(chosen + [{"action": str(a["action"]), "value": v} for a, v in zip(alternatives, values, strict=True)])
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
        candidates=pl.struct("action", "confidence", "alternatives").map_batches(_candidates, return_dtype=CANDIDATE),
    ).with_columns(
        context_hash=_sha256_of(pl.col("context")),
        system_prompt_hash=_sha256_of(pl.col("prompt_context")),
    )


# ---------------------------------------------------------------- rating scale, settled by evidence


def _scale_by_evidence(over: str) -> pl.Expr:
    """The scale the ratings of one group (a rater, a file) prove: any rating > 1 ⇒ 1–5, any rating < 1
    ⇒ 0–1 (1–5 has no 0 and no fraction below 1); both ⇒ no evidence; a group key that is null ⇒ none."""
    r = pl.col("outcome_rating")
    above = (r > 1).any().over(over)
    below = (r < 1).any().over(over)
    scale = pl.when(above & ~below).then(pl.lit("1-5")).when(below & ~above).then(pl.lit("[0,1]"))
    return pl.when(pl.col(over).is_not_null()).then(scale)


def _rater() -> pl.Expr:
    """Who rated, within a dataset: `ratedBy` as recorded; `self` is the deciding actor, so it is per actor."""
    rated_by = pl.col("outcome_rated_by").str.strip_chars().str.to_lowercase()
    own = pl.when(rated_by == "self").then(pl.col("actor_id").fill_null("?")).otherwise(pl.lit(""))
    return pl.concat_str(pl.col("dataset").fill_null(""), rated_by, own, separator="|")


def _configured_scale(decisions: pl.DataFrame, settings: Settings) -> pl.Expr:
    datasets = decisions.get_column("dataset").drop_nulls().unique().to_list()
    configured = {d: _SCALE_LABELS[s] for d in datasets if (s := settings.rating_scale_for(d)) in _SCALE_LABELS}
    return pl.col("dataset").replace_strict(configured, default=None, return_dtype=pl.String)


def settle_rating_scales(decisions: pl.DataFrame, settings: Settings) -> pl.DataFrame:
    """Columns `rating_scale`, `scale_evidence`, `rating_reading` and `rater` for every rated decision.

    Evidence, first that speaks: the dataset's `[decision.rating_scale]` setting; the value itself (≠ 1);
    the rater's other ratings; the file's other ratings; a `wasGoodDecision: false` beside a 1 (the top of
    0–1 for a decision its rater calls bad is excluded, so it is the bottom of 1–5). `true` settles nothing:
    the seed requires wasGoodDecision and makes the rating optional, so `true` may be a writer's default
    left beside a worst 1 of 5; reading that 1 as the top of 0–1 would be a guess that could flip a sign.
    Reading: `ok`, `scale_unknown`, `off_scale` (the value does not exist on the configured scale), or
    `contradicts_was_good_decision` (the normalized rating's sign disagrees with wasGoodDecision)."""
    r = pl.col("outcome_rating")
    rated = r.is_not_null()
    framed = decisions.with_columns(
        rater=pl.when(rated & pl.col("outcome_rated_by").is_not_null()).then(_rater()),
        _file_key=pl.when(rated).then(pl.col("file")),
        _configured=_configured_scale(decisions, settings),
        _by_value=pl.when(r > 1).then(pl.lit("1-5")).when(r < 1).then(pl.lit("[0,1]")),
    ).with_columns(_by_rater=_scale_by_evidence("rater"), _by_file=_scale_by_evidence("_file_key"))
    bottom_of_1_5 = (r == 1) & pl.col("outcome_was_good").not_()
    steps = [("setting", pl.col("_configured")), ("value", pl.col("_by_value")), ("rater", pl.col("_by_rater")),
             ("file", pl.col("_by_file")), ("was_good_decision", pl.when(bottom_of_1_5).then(pl.lit("1-5")))]
    scale, evidence = pl.lit(UNKNOWN_SCALE), pl.lit("none")
    for name, found in reversed(steps):
        scale = pl.when(found.is_not_null()).then(found).otherwise(scale)
        evidence = pl.when(found.is_not_null()).then(pl.lit(name)).otherwise(evidence)
    settled = framed.with_columns(
        rating_scale=pl.when(rated).then(scale), scale_evidence=pl.when(rated).then(evidence)
    )
    return settled.with_columns(rating_reading=pl.when(rated).then(_reading())).drop(pl.selectors.starts_with("_"))


def normalized_rating(value: pl.Expr, scale: pl.Expr) -> pl.Expr:
    """A rating → [0, 1] by its scale: 1–5 → (r − 1) / 4, 0–1 as is; null when the scale is unknown."""
    return pl.when(scale == "1-5").then((value - 1.0) / 4.0).when(scale == "[0,1]").then(value)


def _reading() -> pl.Expr:
    r, scale, good = pl.col("outcome_rating"), pl.col("rating_scale"), pl.col("outcome_was_good")
    n = normalized_rating(r, scale)
    off_scale = ((scale == "1-5") & (r < 1)) | ((scale == "[0,1]") & (r > 1))
    contradicts = (good & (n < 0.5)) | (~good & (n > 0.5))
    return (
        pl.when(scale == UNKNOWN_SCALE).then(pl.lit("scale_unknown"))
        .when(off_scale).then(pl.lit("off_scale"))
        .when(contradicts.fill_null(False)).then(pl.lit("contradicts_was_good_decision"))
        .otherwise(pl.lit("ok"))
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
        locator="locator", file_kind="file_kind", extra="extra", dataset="dataset",
        suggestion_followed_from="suggestion_followed_from", alternatives="alternatives", consensus="consensus",
        follow_up="follow_up", long_term_outcome="long_term_outcome",
    ).struct.json_encode()
    return decisions.select(
        "decision_id", "episode_id", "turn_id", "actor_id",
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


def _rating_signal(decisions: pl.DataFrame) -> pl.DataFrame:
    rated = decisions.filter(pl.col("outcome_rating").is_not_null())
    why = pl.struct(
        "scale_evidence", "dataset", "rater", reading="rating_reading", was_good_decision="outcome_was_good",
        rated_by="outcome_rated_by", outcome="outcome",
    )
    return _signal(rated, "rating", pl.col("outcome_rating"), pl.lit(None), pl.col("rating_scale"),
                   _rated_by_kind(), pl.col("outcome_rated_at"), why)


def _follow_up_signals(decisions: pl.DataFrame) -> list[pl.DataFrame]:
    """seed 004 `outcome.followUp`: later facts about the outcome, kept as signals (no rule rewards them)."""
    context = pl.struct(rated_by="outcome_rated_by", follow_up="follow_up")
    frames = []
    for column in _FOLLOW_UPS:
        rows = decisions.filter(pl.col(column).is_not_null())
        frames.append(_signal(rows, column, pl.col(column), pl.col(column).cast(pl.String), pl.lit("bool"),
                              _rated_by_kind(), pl.col("outcome_rated_at"), context))
    satisfied = decisions.filter(pl.col("follow_up_user_satisfaction").is_not_null())
    frames.append(_signal(satisfied, "follow_up_user_satisfaction", pl.col("follow_up_user_satisfaction"),
                          pl.lit(None), pl.lit("as_recorded"), _rated_by_kind(), pl.col("outcome_rated_at"), context))
    return frames


def _long_term_signal(decisions: pl.DataFrame) -> pl.DataFrame:
    """seed 004 `longTermOutcome`: its final category, with the whole record (checkpoints) as attributes."""
    rows = decisions.filter(pl.col("long_term_outcome").is_not_null())
    return rows.select(
        "episode_id", "decision_id",
        target=pl.lit("decision"),
        name=pl.lit("long_term_outcome"),
        value_num=pl.lit(None, pl.Float64),
        value_text=pl.col("long_term_outcome_final"),
        scale=pl.lit("category"),
        source_kind=pl.lit("outcome"),
        observed_at=pl.lit(None, pl.Datetime("us", "UTC")),
        attributes=pl.col("long_term_outcome"),
    )


def _feedback(decisions: pl.DataFrame) -> pl.DataFrame:
    judged = decisions.filter(pl.col("outcome_was_good").is_not_null())
    overridden = decisions.filter((pl.col("actor_kind") == "human") & pl.col("suggestion_followed").not_())
    signals = pl.concat([
        _rating_signal(decisions),
        _signal(judged, "was_good_decision", pl.col("outcome_was_good"), pl.col("outcome_was_good").cast(pl.String),
                pl.lit("bool"), _rated_by_kind(), pl.col("outcome_rated_at"),
                pl.struct(rated_by="outcome_rated_by", outcome="outcome")),
        _signal(overridden, "suggestion_overridden", pl.lit(1.0), pl.lit("true"), pl.lit("bool"), pl.lit("human"),
                pl.col("ts"), pl.struct("suggested_action", "action", "companion_suggestion", "suggestion_followed_from")),
        *_follow_up_signals(decisions),
        _long_term_signal(decisions),
    ])
    feedback_id = pl.struct("target", "decision_id", "name", "value_num", "value_text").map_batches(
        lambda s: pl.Series([stable_hash(*row.values()) for row in s.to_list()], dtype=pl.String),
        return_dtype=pl.String,
    )
    return signals.with_columns(feedback_id=feedback_id, turn_id=pl.lit(None, pl.String))
