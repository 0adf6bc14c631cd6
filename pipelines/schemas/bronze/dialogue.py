"""Bronze contract of the `dialogue` source: conversations and feedback events, one row per raw
line."""

from __future__ import annotations

import pandera.polars as pa
import polars as pl

from pipelines.schemas.strict import StrictModel

UTC_TS = pl.Datetime("us", "UTC")
TURN = pl.Struct({"role": pl.String, "content": pl.String, "ts": UTC_TS, "extra": pl.String})


class DialogueConversations(StrictModel):
    file: str = pa.Field(
        description="Raw file, relative to the raw root (`dialogues/<dataset>/...jsonl`)."
    )
    locator: str = pa.Field(description="Where the record starts: `line N (byte B)`.")
    line: pl.Int64 = pa.Field(
        ge=1, description="1-based line of the record; orders records within a file."
    )
    dataset: str = pa.Field(
        description="First folder under `dialogues/` (`default` for files directly under it); "
        "scopes conversation ids."
    )
    conversation_id: str = pa.Field(
        description="The conversation's own id (integers are kept as their decimal text)."
    )
    turns: pl.List(TURN) = pa.Field(
        description="Turns in source order: role and content as written, turn timestamp if any, "
        "unmapped turn fields as JSON text."
    )
    tags: pl.List(pl.String) = pa.Field(
        nullable=True, description="Tags as written; null when the record has none."
    )
    quality: pl.Float64 = pa.Field(
        nullable=True, description="Conversation quality when numeric (numeric strings accepted)."
    )
    quality_raw: str = pa.Field(
        nullable=True,
        description="Quality as JSON text when present but not numeric (e.g. a label).",
    )
    created_at: UTC_TS = pa.Field(
        nullable=True, description="`created_at` of the conversation (UTC), if present."
    )
    updated_at: UTC_TS = pa.Field(
        nullable=True, description="`updated_at` of the conversation (UTC), if present."
    )
    record_hash: str = pa.Field(
        description="Hash of the dataset and the whole parsed record: equal hashes mean identical "
        "deliveries."
    )
    extra: str = pa.Field(
        nullable=True, description="Unmapped raw fields as a JSON object (never dropped)."
    )


class DialogueFeedbackEvents(StrictModel):
    file: str = pa.Field(
        description="Raw file, relative to the raw root (`feedback/<dataset>/...jsonl`)."
    )
    locator: str = pa.Field(description="Where the record starts: `line N (byte B)`.")
    line: pl.Int64 = pa.Field(
        ge=1, description="1-based line of the record; orders records within a file."
    )
    dataset: str = pa.Field(
        description="First folder under `feedback/` (`default` for files directly under it)."
    )
    event_id: str = pa.Field(
        nullable=True, description="The event's own id, if the producer wrote one."
    )
    event_key: str = pa.Field(
        description="Delivery-independent identity: hash of the event id when present, else of the "
        "record's content."
    )
    conversation_id: str = pa.Field(
        description="Conversation the event is about (scoped by dataset)."
    )
    turn_index: pl.Int64 = pa.Field(
        nullable=True,
        description="Turn index exactly as written (base 0 or 1 is a per-dataset setting); null = "
        "about the whole conversation.",
    )
    rating: pl.Float64 = pa.Field(
        nullable=True,
        description="Numeric rating (thumbs +1/0/-1); null when absent or not numeric.",
    )
    rating_raw: str = pa.Field(
        nullable=True,
        description="Rating as JSON text when present but not numeric (rejected later, in silver).",
    )
    reward: pl.Float64 = pa.Field(
        nullable=True,
        description="Explicit reward, if present (expected in [-1, 1]; checked in silver).",
    )
    comment: str = pa.Field(nullable=True, description="Free-text comment, if present.")
    observed_at: UTC_TS = pa.Field(
        nullable=True,
        description="When the event was recorded (`created_at`, else `timestamp`), UTC.",
    )
    record_hash: str = pa.Field(
        description="Hash of the dataset and the whole parsed record: equal hashes mean identical "
        "deliveries."
    )
    extra: str = pa.Field(
        nullable=True,
        description="Unmapped raw fields (user_id, ...) as a JSON object (never dropped).",
    )


BRONZE_MODELS: dict[str, type[pa.DataFrameModel]] = {
    "dialogue_conversations": DialogueConversations,
    "dialogue_feedback_events": DialogueFeedbackEvents,
}
