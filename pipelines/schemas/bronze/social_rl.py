"""Bronze contract of the `social_rl` source (Social RL rounds, policy states, PRAR states,
run attachments).

One row per raw record; each raw file of this source is one record (a JSON document).
"""

from __future__ import annotations

import pandera.polars as pa
import polars as pl

from pipelines.schemas.strict import StrictModel

UTC_TS = pl.Datetime("us", "UTC")

MESSAGE = pl.Struct(
    {
        "agent_id": pl.String,
        "content": pl.String,
        "round_number": pl.Int64,
        "turn_number": pl.Int64,
        "ts": UTC_TS,
        "prar_cue_used": pl.String,
        "internal": pl.Boolean,
        "message_role": pl.String,
        "context_frame": pl.String,
        "validation": pl.String,
        "extra": pl.String,
    }
)

FEEDBACK_VECTOR = pl.Struct(
    {
        "agent_id": pl.String,
        "round_number": pl.Int64,
        "engagement": pl.Float64,
        "theoretical_alignment": pl.Float64,
        "contribution_value": pl.Float64,
        "direct_references": pl.Int64,
        "response_received": pl.Int64,
        "concepts_embodied": pl.List(pl.String),
        "analyst_mentions": pl.Int64,
        "synthesis_inclusion": pl.Float64,
        "extra": pl.String,
    }
)

# Both shapes seen: documented {adaptation_type, cue, reason, feedback_trigger, round_number}
# and real {agent_id, role, deltas{...}, round}; absent fields of the other shape are null.
ADAPTATION = pl.Struct(
    {
        "agent_id": pl.String,
        "role": pl.String,
        "adaptation_type": pl.String,
        "cue": pl.String,
        "reason": pl.String,
        "round_number": pl.Int64,
        "engagement_delta": pl.Float64,
        "alignment_delta": pl.Float64,
        "contribution_delta": pl.Float64,
        "feedback_trigger": pl.String,
        "extra": pl.String,
    }
)


# One cue of one role's policy; fields a policy_state shape does not have are null.
POLICY_CUE = pl.Struct(
    {
        "role": pl.String,
        "policy_name": pl.String,
        "cue_index": pl.Int64,
        "cue_id": pl.String,
        "mode": pl.String,
        "text": pl.String,
        "active": pl.Boolean,
        "intensity": pl.Float64,
        "grounding": pl.String,
        "last_triggered": UTC_TS,
        "thresholds": pl.String,
        "feedback_snapshot": pl.String,
        "extra": pl.String,
    }
)


class SocialRlRounds(StrictModel):
    file: str = pa.Field(
        description="Raw file (relative to the raw root): "
        "outputs/<run_dir>/round<N>_social_rl.json."
    )
    locator: str = pa.Field(
        description="Where the record is in the file (`file`: the whole document)."
    )
    run_dir: str = pa.Field(
        description="Run folder under outputs/ (not necessarily the experiment_id)."
    )
    round_number: pl.Int64 = pa.Field(
        ge=0, description="Round number of the record (equals N of the file name)."
    )
    messages: pl.List(MESSAGE) = pa.Field(
        description="Agent messages in file order; `ts` from the epoch `timestamp`, `internal` "
        "false unless the coach flagged it, `validation` = validation_metadata JSON, `extra` = "
        "unmapped fields JSON."
    )
    feedback: pl.List(FEEDBACK_VECTOR) = pa.Field(
        description="Per-agent feedback vectors in file order (the raw object keyed by agent id, "
        "flattened)."
    )
    policy_adaptations: pl.List(ADAPTATION) = pa.Field(
        description="Policy adaptations normalised over both shapes (documented cue shape and real "
        "deltas shape)."
    )
    synthesis: str = pa.Field(nullable=True, description="Round synthesis text (may be empty).")
    duration_seconds: pl.Float64 = pa.Field(
        nullable=True, description="Wall-clock duration of the round in seconds."
    )
    round_config: str = pa.Field(
        nullable=True, description="round_config object (scenario, rules, tasks) as JSON text."
    )
    meta: str = pa.Field(
        nullable=True,
        description="Inline `meta` block as JSON text (absent in real files, which use meta.json).",
    )
    extra: str = pa.Field(nullable=True, description="Unmapped top-level fields as JSON text.")


class SocialRlMeta(StrictModel):
    file: str = pa.Field(
        description="Raw file (relative to the raw root): outputs/<run_dir>/meta.json."
    )
    locator: str = pa.Field(
        description="Where the record is in the file (`file`: the whole document)."
    )
    run_dir: str = pa.Field(description="Run folder under outputs/.")
    experiment_id: str = pa.Field(
        nullable=True, description="Experiment id as written (need not equal run_dir)."
    )
    social_rl_version: str = pa.Field(
        nullable=True,
        description="social_rl_version as written; null when missing (pre-0.2.0 runs).",
    )
    model: str = pa.Field(nullable=True, description="LLM model identifier.")
    framework: str = pa.Field(
        nullable=True, description="Human-readable theoretical framework name."
    )
    framework_option: str = pa.Field(nullable=True, description="Framework option code (A-E).")
    prar_run_id: str = pa.Field(
        nullable=True, description="PRAR output folder the run used, if written."
    )
    prar_state_file: str = pa.Field(
        nullable=True, description="Path of the PRAR state.json the run used, if written."
    )
    written_at: UTC_TS = pa.Field(
        nullable=True, description="meta `timestamp` (naive, read in the source time zone) in UTC."
    )
    extra: str = pa.Field(
        nullable=True,
        description="Other meta fields (provider, temperatures, git_commit, ...) as JSON text.",
    )


class SocialRlMetrics(StrictModel):
    file: str = pa.Field(
        description="Raw file (relative to the raw root): outputs/<run_dir>/metrics.json."
    )
    locator: str = pa.Field(
        description="Where the record is in the file (`file`: the whole document)."
    )
    run_dir: str = pa.Field(description="Run folder under outputs/.")
    metrics: str = pa.Field(
        description="The relational metrics document (per_round, aggregate) as JSON text."
    )


class SocialRlPrarStates(StrictModel):
    file: str = pa.Field(
        description="Raw file (relative to the raw root): prar/outputs/<run>/state.json."
    )
    locator: str = pa.Field(
        description="Where the record is in the file (`file`: the whole document)."
    )
    run_name: str = pa.Field(
        description="PRAR run folder name (what meta prar_run_id / prar_state_file point at)."
    )
    current_step: str = pa.Field(
        nullable=True, description="PRAR workflow step reached (e.g. `3.3`)."
    )
    state: str = pa.Field(description="The whole state document as JSON text.")


class SocialRlPolicyStates(StrictModel):
    file: str = pa.Field(
        description="Raw file (relative to the raw root): outputs/<run_dir>/policy_state.json."
    )
    locator: str = pa.Field(
        description="Where the record is in the file (`file`: the whole document)."
    )
    run_dir: str = pa.Field(description="Run folder under outputs/.")
    shape: str = pa.Field(
        isin=("documented", "per_role"),
        description="documented ({framework_option, policies[...], ...}) or per_role "
        "({Role: {name, cues, thresholds}}).",
    )
    framework_option: str = pa.Field(
        nullable=True, description="Framework option (documented shape)."
    )
    framework_name: str = pa.Field(nullable=True, description="Framework name (documented shape).")
    source_run_id: str = pa.Field(
        nullable=True, description="PRAR run the policies came from (documented shape)."
    )
    social_rl_version: str = pa.Field(
        nullable=True, description="social_rl_version as written (documented shape)."
    )
    written_at: UTC_TS = pa.Field(
        nullable=True, description="Document `timestamp` in UTC (documented shape)."
    )
    cues: pl.List(POLICY_CUE) = pa.Field(
        description="One entry per role × cue in file order "
        "(a role without cues: one entry, cue null)."
    )
    extra: str = pa.Field(nullable=True, description="Unmapped top-level fields as JSON text.")


class SocialRlAttachments(StrictModel):
    file: str = pa.Field(
        description="Raw file (relative to the raw root) of a run folder that no other file "
        "kind reads."
    )
    locator: str = pa.Field(
        description="Where the record is in the file (`file`: the whole document)."
    )
    run_kind: str = pa.Field(
        isin=("social_rl", "prar"),
        description="social_rl (outputs/<run_dir>/) or prar (prar/outputs/<run>/).",
    )
    run_dir: str = pa.Field(description="Run folder the file belongs to.")
    name: str = pa.Field(description="File name (e.g. agents.json, social_rl_report.txt).")
    n_bytes: pl.Int64 = pa.Field(ge=0, description="File size in bytes.")
    sha256: str = pa.Field(description="sha256 of the file's bytes.")
    content: str = pa.Field(description="The file's text (UTF-8), kept whole.")


BRONZE_MODELS: dict[str, type[pa.DataFrameModel]] = {
    "social_rl_rounds": SocialRlRounds,
    "social_rl_meta": SocialRlMeta,
    "social_rl_metrics": SocialRlMetrics,
    "social_rl_prar_states": SocialRlPrarStates,
    "social_rl_policy_states": SocialRlPolicyStates,
    "social_rl_attachments": SocialRlAttachments,
}
