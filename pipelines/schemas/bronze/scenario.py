"""Bronze contract of the moderator–user scenario dialogs (`scenario`).

Raw files: `scenarios/<state>/<SCENARIO-ID>/moderator_dialog.jsonl`.
`scenario_entries`: one row per dialog entry (moderator message, user response, decision, outcome).
`scenario_metadata`: one row per `scenario_metadata` object (appended at scenario completion).

`scenario_id` is the scenario FOLDER name: the producing logger writes each scenario into its own
folder, so the folder is the identity; the id the record itself claims is kept in
`entry_scenario_id` (silver reports mismatches in the episode attributes).
"""

from __future__ import annotations

import pandera.polars as pa
import polars as pl

from pipelines.schemas.strict import StrictModel

UTC_TS = pl.Datetime("us", "UTC")


class _ScenarioRecord(StrictModel):
    file: str = pa.Field(description="Raw file, relative to the raw root.")
    locator: str = pa.Field(description="Where the record starts: `line N (byte B)`.")
    record_index: pl.Int64 = pa.Field(
        ge=0,
        description="0-based position of the record among the records of the file that parse as "
        "JSON (source order).",
    )
    state: str = pa.Field(
        description="Lifecycle folder the file lies in (active, completed, archived, ...)."
    )
    scenario_id: str = pa.Field(
        description="Scenario id = the scenario folder name (the native id)."
    )
    entry_scenario_id: str = pa.Field(
        nullable=True,
        description="`scenario_id` as written in the record, if any (may differ from the folder).",
    )
    ts: UTC_TS = pa.Field(nullable=True, description="Record `timestamp` (UTC).")
    interaction_type: str = pa.Field(
        nullable=True,
        description="`interaction_type` (or legacy `type`); any value is kept, not only the "
        "documented eight.",
    )
    extra: str = pa.Field(
        nullable=True, description="JSON object of top-level raw fields this adapter does not map."
    )


class ScenarioEntries(_ScenarioRecord):
    phase: str = pa.Field(nullable=True, description="Scenario phase (e.g. `phase_2`).")
    round: pl.Int64 = pa.Field(
        nullable=True, ge=0, description="Specialist round within the phase."
    )
    user_first: bool = pa.Field(
        description="True when the user spoke first in this entry (a `moderator_response` answers "
        "the user), so the user turn precedes the moderator turn."
    )
    moderator_text: str = pa.Field(
        nullable=True,
        description="Moderator message text (`content` of the object, or the plain string).",
    )
    moderator_message_type: str = pa.Field(
        nullable=True,
        description="Moderator `message_type` / `response_type` (e.g. checkpoint_prompt).",
    )
    moderator_fields: str = pa.Field(
        nullable=True,
        description="JSON object of the other moderator message fields (prompt_structure, ...).",
    )
    user_text: str = pa.Field(
        nullable=True,
        description="User text (`user_response` / `user_message` content, plain string, or "
        "top-level `content`).",
    )
    user_response_type: str = pa.Field(
        nullable=True, description="User `response_type` / `message_type`."
    )
    user_fields: str = pa.Field(
        nullable=True,
        description="JSON object of the other user message fields, `signals` included.",
    )
    provided_correction: bool = pa.Field(
        nullable=True, description="signals.provided_correction: the user corrected the moderator."
    )
    correction_magnitude: str = pa.Field(
        nullable=True,
        description="signals.correction_magnitude (minor, moderate, major; other labels kept).",
    )
    expressed_satisfaction: bool = pa.Field(
        nullable=True,
        description="signals.expressed_satisfaction: the user expressed satisfaction.",
    )
    validated_output: bool = pa.Field(
        nullable=True,
        description="validated_output (user signals, quality_signals or outcome): the user "
        "validated the output.",
    )
    new_strategic_context: bool = pa.Field(
        nullable=True,
        description="new_strategic_context (user signals, quality_signals or outcome): the user "
        "added strategic context the moderator did not have.",
    )
    action_taken: str = pa.Field(nullable=True, description="moderator_action.action_taken.")
    significance_evaluation: str = pa.Field(
        nullable=True, description="moderator_action.significance_evaluation (minor, major, ...)."
    )
    proposed_action: str = pa.Field(
        nullable=True,
        description="moderator_action.proposed_action: what the moderator suggested (e.g. "
        "re-round).",
    )
    moderator_reasoning: str = pa.Field(nullable=True, description="moderator_action.reasoning.")
    moderator_action: str = pa.Field(
        nullable=True, description="The whole moderator_action object as JSON text."
    )
    user_decision: str = pa.Field(
        nullable=True, description="user_decision.decision (or `decision`): what the user decided."
    )
    decision_reasoning: str = pa.Field(nullable=True, description="user_decision.reasoning.")
    decision_time_seconds: pl.Float64 = pa.Field(
        nullable=True, ge=0, description="user_decision.decision_time_seconds."
    )
    user_decision_fields: str = pa.Field(
        nullable=True, description="The whole user decision object as JSON text."
    )
    outcome: str = pa.Field(nullable=True, description="The whole outcome object as JSON text.")
    user_validated: bool = pa.Field(nullable=True, description="outcome.user_validated.")
    user_satisfaction_score: pl.Float64 = pa.Field(
        nullable=True,
        ge=0,
        le=1,
        description="outcome.user_satisfaction_score in [0,1] (numeric strings accepted).",
    )
    checkpoint_successful: bool = pa.Field(
        nullable=True, description="outcome.checkpoint_successful."
    )
    iteration_triggered: bool = pa.Field(nullable=True, description="outcome.iteration_triggered.")
    phase_completed: bool = pa.Field(nullable=True, description="outcome.phase_completed.")
    quality_signals: str = pa.Field(
        nullable=True, description="The whole quality_signals object as JSON text."
    )
    moderator_effectiveness: str = pa.Field(
        nullable=True,
        description="quality_signals.moderator_effectiveness (excellent, good, fair, poor; other "
        "labels kept).",
    )
    decision_confidence: str = pa.Field(
        nullable=True, description="quality_signals.decision_confidence (high, medium, low)."
    )
    context: str = pa.Field(
        nullable=True,
        description="The entry `context` object (specialists consulted, files created, ...) as "
        "JSON text.",
    )
    checkpoint_timing: str = pa.Field(
        nullable=True,
        description="checkpoint_timing label (quality_signals, user signals or outcome); a number "
        "is kept as its text.",
    )
    question_quality: str = pa.Field(
        nullable=True,
        description="question_quality label of the moderator's questions (quality_signals, user "
        "signals or outcome); a number is kept as its text.",
    )
    user_engagement_level: str = pa.Field(
        nullable=True,
        description="user_engagement_level label (high, medium, low; quality_signals, user signals "
        "or outcome).",
    )
    feedback_specificity: str = pa.Field(
        nullable=True,
        description="feedback_specificity label of the user's reply (quality_signals, user signals "
        "or outcome).",
    )
    engagement_indicators: str = pa.Field(
        nullable=True,
        description="engagement_indicators as JSON text (a list or an object, as written).",
    )
    synthesis_length_words: pl.Int64 = pa.Field(
        nullable=True,
        ge=0,
        description="context.synthesis_length_words: words of the synthesis the checkpoint "
        "presents.",
    )
    checkpoint_number: pl.Int64 = pa.Field(
        nullable=True,
        ge=0,
        description="context.checkpoint_number: which checkpoint of the scenario the entry belongs "
        "to (a re-round repeats it).",
    )


class ScenarioMetadata(_ScenarioRecord):
    total_phases: pl.Int64 = pa.Field(
        nullable=True, ge=0, description="scenario_metadata.total_phases."
    )
    total_checkpoints: pl.Int64 = pa.Field(
        nullable=True, ge=0, description="scenario_metadata.total_checkpoints."
    )
    total_specialist_consultations: pl.Int64 = pa.Field(
        nullable=True, ge=0, description="scenario_metadata.total_specialist_consultations."
    )
    total_iterations_triggered: pl.Int64 = pa.Field(
        nullable=True, ge=0, description="scenario_metadata.total_iterations_triggered."
    )
    user_satisfaction_overall: pl.Float64 = pa.Field(
        nullable=True,
        ge=0,
        le=1,
        description="scenario_metadata.user_satisfaction_overall in [0,1] (numeric strings "
        "accepted).",
    )
    completion_time_hours: pl.Float64 = pa.Field(
        nullable=True,
        ge=0,
        description="scenario_metadata.completion_time_hours (numeric strings accepted).",
    )
    scenario_successful: bool = pa.Field(
        nullable=True, description="scenario_metadata.scenario_successful."
    )
    metadata: str = pa.Field(description="The whole scenario_metadata object as JSON text.")


BRONZE_MODELS: dict[str, type[pa.DataFrameModel]] = {
    "scenario_entries": ScenarioEntries,
    "scenario_metadata": ScenarioMetadata,
}
