"""Bronze contract of the `decision` source: one row per CoordinationDecision record.

Both raw kinds (SQLite rows of `coordination_decisions`, snake_case; JSONL exported entities,
camelCase) land in the same table, so cross-file dedup can happen in silver.
"""

from __future__ import annotations

import pandera.polars as pa
import polars as pl

from pipelines.schemas.strict import StrictModel

JSON = "JSON text"


class DecisionRecords(StrictModel):
    file: str = pa.Field(description="Raw file (relative to the raw root).")
    locator: str = pa.Field(description="`row id N` (SQLite) or `line N (byte M)` (JSONL).")
    ordinal: pl.Int64 = pa.Field(
        ge=0,
        description="Position of the record in its file (SQLite rowid or JSONL line), for ordering "
        "copies.",
    )
    file_kind: str = pa.Field(
        isin=("sqlite", "jsonl"), description="Kind of raw file the record came from."
    )
    decision_id: str = pa.Field(description="The decision's own id (`id`).")
    session_id: str = pa.Field(
        description="Decision session (`metadata.sessionId`, or a top-level session id)."
    )
    context_id: str = pa.Field(
        nullable=True,
        description="Room / game / PR the decision happened in (`metadata.contextId`).",
    )
    sequence_number: pl.Int64 = pa.Field(
        nullable=True,
        description="Order of the decision in its session (`metadata.sequenceNumber`).",
    )
    actor_id: str = pa.Field(nullable=True, description="Who decided (`actorId`).")
    actor_type: str = pa.Field(
        nullable=True, description="Actor type as recorded (`human`, `ai-persona`, ...)."
    )
    actor_name: str = pa.Field(nullable=True, description="Display name of the actor.")
    trigger_event_id: str = pa.Field(
        nullable=True, description="Message / event that triggered the decision point."
    )
    domain: str = pa.Field(
        nullable=True, description="Activity domain (chat, game, code, analysis)."
    )
    action: str = pa.Field(description="Chosen action (`decision.action`: POSTED, SILENT, ...).")
    confidence: pl.Float64 = pa.Field(
        nullable=True,
        ge=0,
        le=1,
        description="Decider's confidence in [0,1] (`decision.confidence`).",
    )
    reasoning: str = pa.Field(
        nullable=True, description="Decider's stated reasoning (`decision.reasoning`)."
    )
    response_content: str = pa.Field(
        nullable=True,
        description="Message posted by the decision, if any (`decision.responseContent`).",
    )
    model_used: str = pa.Field(
        nullable=True, description="Model that made the decision (`decision.modelUsed`)."
    )
    decision_details: str = pa.Field(
        nullable=True,
        description=f"{JSON}: the other fields of the `decision` object (provider, tokens, "
        "response time, unknown keys).",
    )
    suggested_action: str = pa.Field(
        nullable=True,
        description="Action a companion AI suggested "
        "(`decision.companionSuggestion.suggestedAction`).",
    )
    companion_suggestion: str = pa.Field(
        nullable=True,
        description=f"{JSON}: the whole companion suggestion (confidence, reasoning, wasFollowed).",
    )
    was_followed: bool = pa.Field(
        nullable=True,
        description="`decision.companionSuggestion.wasFollowed`: the source's own word on whether "
        "the human followed the suggestion.",
    )
    alternatives: str = pa.Field(
        nullable=True,
        description=f"{JSON}: options considered and not chosen (`alternatives`, top level or in "
        "`decision`): action, confidence, reasoning, whyNotChosen.",
    )
    consensus: str = pa.Field(
        nullable=True,
        description=f"{JSON}: multi-agent debate before the decision (`consensus`, top level or in "
        "`decision`): participants, votes, finalDecision.",
    )
    system_prompt: str = pa.Field(
        nullable=True,
        description="System prompt the model saw (`ragContext.identity.systemPrompt`).",
    )
    rag_context: str = pa.Field(
        nullable=True,
        description=f"{JSON}: the RAG context exactly as the model saw it, decompressed, keys "
        "sorted.",
    )
    rag_context_encoding: str = pa.Field(
        nullable=True,
        isin=("gzip", "plain", "object"),
        description="How rag_context was stored: gzip (`gzip:`+base64 or gzip bytes), plain JSON "
        "text, or a JSON object.",
    )
    visual_context: str = pa.Field(
        nullable=True, description=f"{JSON}: what the actor saw on screen."
    )
    coordination_snapshot: str = pa.Field(
        nullable=True, description=f"{JSON}: ThoughtStream coordination state."
    )
    ambient_state: str = pa.Field(
        nullable=True, description=f"{JSON}: ambient activity state (temperature, presence, ...)."
    )
    metadata: str = pa.Field(
        nullable=True,
        description=f"{JSON}: the whole `metadata` object (session, context, tags, versions).",
    )
    outcome: str = pa.Field(
        nullable=True, description=f"{JSON}: the whole outcome; null until rated."
    )
    outcome_rating: pl.Float64 = pa.Field(
        nullable=True, ge=0, le=5, description="`outcome.rating` as recorded (0–1 or 1–5 scale)."
    )
    outcome_was_good: bool = pa.Field(nullable=True, description="`outcome.wasGoodDecision`.")
    outcome_rated_by: str = pa.Field(
        nullable=True, description="`outcome.ratedBy` (self, user, system, community)."
    )
    outcome_rated_at: pl.Datetime("us", "UTC") = pa.Field(
        nullable=True, description="`outcome.ratedAt` (UTC)."
    )
    follow_up: str = pa.Field(
        nullable=True,
        description=f"{JSON}: `outcome.followUp` (or a top-level `followUp`), long-term tracking "
        "of the outcome.",
    )
    follow_up_conversation_continued: bool = pa.Field(
        nullable=True, description="`followUp.conversationContinued`."
    )
    follow_up_user_satisfaction: pl.Float64 = pa.Field(
        nullable=True,
        description="`followUp.userSatisfaction`, as recorded (its scale is not stated by the "
        "source).",
    )
    follow_up_mistake_corrected: bool = pa.Field(
        nullable=True, description="`followUp.mistakeCorrected`."
    )
    long_term_outcome: str = pa.Field(
        nullable=True,
        description=f"{JSON}: `longTermOutcome` (top level, or in `outcome`): checkpoints and a "
        "final outcome.",
    )
    long_term_outcome_final: str = pa.Field(
        nullable=True,
        description="`longTermOutcome.finalOutcome` (excellent, good, neutral, poor, disaster).",
    )
    ts: pl.Datetime("us", "UTC") = pa.Field(
        nullable=True, description="When the decision was made (`timestamp`, epoch ms or ISO; UTC)."
    )
    extra: str = pa.Field(
        nullable=True, description=f"{JSON}: unknown top-level columns / fields, kept verbatim."
    )


class DecisionRatingEvents(StrictModel):
    """A later rating of a decision (`turnlake decision rate`), one line of `ratings/**/*.jsonl`."""

    file: str = pa.Field(description="Raw file (relative to the raw root, under `ratings/`).")
    locator: str = pa.Field(description="`line N (byte M)` of the event.")
    line: pl.Int64 = pa.Field(ge=1, description="1-based line; orders events in a file.")
    event_id: str = pa.Field(description="The event's own id (a UUID written by `rate`).")
    decision_id: str = pa.Field(description="The decision rated.")
    rating: pl.Float64 = pa.Field(ge=0, le=5, description="The rating, on `scale`.")
    scale: str = pa.Field(isin=("0-1", "1-5"), description="The scale the rater stated.")
    rated_by: str = pa.Field(
        isin=("user", "system", "community"), description="Rater kind (`--by`)."
    )
    rated_at: pl.Datetime("us", "UTC") = pa.Field(description="When the rating was given (UTC).")
    reason: str = pa.Field(nullable=True, description="The rater's reason (`--reason`).")
    extra: str = pa.Field(
        nullable=True, description="Fields the adapter does not map, as a JSON object."
    )


class DecisionReplayResults(StrictModel):
    """What another persona / model chose for a decision: one line of `replays/**/*.jsonl`."""

    file: str = pa.Field(description="Raw file (relative to the raw root, under `replays/`).")
    locator: str = pa.Field(description="`line N (byte M)` of the result.")
    line: pl.Int64 = pa.Field(ge=1, description="1-based line; orders results in a file.")
    decision_id: str = pa.Field(description="The decision replayed (`custom_id` in batch output).")
    persona: str = pa.Field(
        description="Persona replayed (`persona`; batch output: the folder under `replays/`)."
    )
    model: str = pa.Field(nullable=True, description="Model that answered, where recorded.")
    shape: str = pa.Field(
        isin=("plain", "openai_batch"), description="Which of the two line shapes it came in."
    )
    action: str = pa.Field(description="The action the persona chose.")
    confidence: pl.Float64 = pa.Field(
        nullable=True, ge=0, le=1, description="Its confidence in [0,1], where given."
    )
    reasoning: str = pa.Field(nullable=True, description="Its stated reasoning, where given.")
    response: str = pa.Field(nullable=True, description="The text it would have posted.")
    extra: str = pa.Field(
        nullable=True, description="Fields the adapter does not map, as a JSON object."
    )


BRONZE_MODELS: dict[str, type[pa.DataFrameModel]] = {
    "decision_records": DecisionRecords,
    "decision_rating_events": DecisionRatingEvents,
    "decision_replay_results": DecisionReplayResults,
}
