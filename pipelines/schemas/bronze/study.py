"""Bronze contract of the wildfire evacuation persuasion study (`study`).

`study_sessions`: one row per COPY of a conversation session (its own file, a master-JSONL line,
or an entry of a completed/exit participant file). The same session may appear up to three times
here; silver picks one copy per session.
`study_participants`: one row per completed (CCC###) or exit (INC###) participant file.
"""

from __future__ import annotations

import pandera.polars as pa
import polars as pl

from pipelines.schemas.strict import StrictModel

COPY_KINDS = ("session_file", "master", "completed", "exit")
PARTICIPANT_ID_ORIGINS = ("record", "participantId", "enclosing_file")

HISTORY_ENTRY = pl.Struct({"role": pl.String, "text": pl.String, "extra": pl.String})
Q_VALUE = pl.Struct({"policy": pl.String, "value": pl.Float64})
IQL_STEP = pl.Struct(
    {
        "turn": pl.Int64,
        "resident_message": pl.String,
        "operator_response": pl.String,
        "selected_policy": pl.String,
        "q_values": pl.List(Q_VALUE),
        "judge_stance": pl.String,
        "judge_confidence": pl.Float64,
        "judge_reasoning": pl.String,
        "ts": pl.Datetime("us", "UTC"),
        "extra": pl.String,
    }
)


class StudySessions(StrictModel):
    file: str = pa.Field(description="Raw file (relative to the raw root) holding this copy.")
    locator: str = pa.Field(
        description="Where in the file: `file` (session file), `line N (byte B)` (master JSONL) or "
        "`conversations[i]` (participant file)."
    )
    copy_kind: str = pa.Field(
        isin=COPY_KINDS,
        description="Which kind of file the copy came from: session_file, master, completed or "
        "exit.",
    )
    session_id: str = pa.Field(
        description="The session's own id (`<participant>_<character|nonrole_strategy>_<epoch>`)."
    )
    participant_id: str = pa.Field(
        nullable=True,
        description="Participant of the session, if this copy or its enclosing file names one.",
    )
    participant_id_from: str = pa.Field(
        nullable=True,
        isin=PARTICIPANT_ID_ORIGINS,
        description="Where participant_id came from: record (`participant_id`), participantId "
        "(camelCase spelling) or enclosing_file (the CCC/INC file's participant).",
    )
    character: str = pa.Field(
        nullable=True,
        description="Role-play character (e.g. niki, bob); null for non-roleplay sessions.",
    )
    conversation_type: str = pa.Field(
        nullable=True, description="roleplay or non-roleplay, as recorded."
    )
    persuasion_strategy: str = pa.Field(
        nullable=True,
        description="Persuasion strategy of non-roleplay sessions (rational-informational, ...).",
    )
    turn_count: pl.Int64 = pa.Field(
        nullable=True,
        description="The session's own `turn_count` field (numeric strings accepted).",
    )
    history: pl.List(HISTORY_ENTRY) = pa.Field(
        description="Transcript in order: `{role: operator|resident, text, extra}`; extra = "
        "unknown fields as JSON text."
    )
    iql: pl.List(IQL_STEP) = pa.Field(
        description="`iql_data` steps: turn (1-based resident message number), messages, "
        "selected_policy, q_values as `{policy, value}` list, the judge's "
        "stance/confidence/reasoning (`reasoning` or `reason`), ts, extra."
    )
    created_at: pl.Datetime("us", "UTC") = pa.Field(
        nullable=True,
        description="When the session started (UTC; naive times read in the source time zone).",
    )
    ended_at: pl.Datetime("us", "UTC") = pa.Field(
        nullable=True, description="When the session ended (UTC)."
    )
    scenario: str = pa.Field(nullable=True, description="Scenario text shown to the participant.")
    extra: str = pa.Field(
        nullable=True, description="Unknown top-level fields of the session record, as JSON text."
    )


class StudyParticipants(StrictModel):
    file: str = pa.Field(
        description="Raw file (relative to the raw root): completed/CCC###.json or "
        "exits/INC###.json."
    )
    locator: str = pa.Field(
        description="Always `participant`: the file's participant record (its conversations are "
        "study_sessions rows)."
    )
    confirmation_number: str = pa.Field(
        description="CCC### / INC### confirmation number (the file stem when the field is absent)."
    )
    participant_id: str = pa.Field(nullable=True, description="Participant id of the file.")
    status: str = pa.Field(nullable=True, description="complete / incomplete, as recorded.")
    completed_at: pl.Datetime("us", "UTC") = pa.Field(
        nullable=True, description="`completion_timestamp` (UTC) of completed files."
    )
    exit_at: pl.Datetime("us", "UTC") = pa.Field(
        nullable=True, description="`exit_timestamp` (UTC) of exit files."
    )
    exit_page: str = pa.Field(
        nullable=True, description="Page the participant left the study on (exit files)."
    )
    n_conversations: pl.Int64 = pa.Field(
        ge=0,
        description="Number of entries in the file's `conversations` list (fewer than six, or "
        "none, happens).",
    )
    survey: str = pa.Field(
        nullable=True,
        description="Pre-study survey as JSON text. Holds PII (email, nickname): bronze only, "
        "never copied to silver.",
    )
    post_surveys: str = pa.Field(
        nullable=True,
        description="Post-conversation surveys (sessionId, willing, naturalness, ...) as JSON "
        "text.",
    )
    extra: str = pa.Field(
        nullable=True, description="Unknown top-level fields of the participant file, as JSON text."
    )


BRONZE_MODELS: dict[str, type[pa.DataFrameModel]] = {
    "study_sessions": StudySessions,
    "study_participants": StudyParticipants,
}
