"""The Polars schema of every bronze table, by source, in its model's column order:
generated from the Pandera models (pipelines/schemas/bronze/) by `turnlake dictionary`; do not
edit. What parsing types rows with, without importing Pandera (pipelines/reports/bronze_dtypes.py).
A struct dtype is named after the first column that holds it.
"""

from __future__ import annotations

import polars as pl

SCENARIO_ENTRIES = pl.Schema(
    {
        "file": pl.String,
        "locator": pl.String,
        "record_index": pl.Int64,
        "state": pl.String,
        "scenario_id": pl.String,
        "entry_scenario_id": pl.String,
        "ts": pl.Datetime("us", "UTC"),
        "interaction_type": pl.String,
        "extra": pl.String,
        "phase": pl.String,
        "round": pl.Int64,
        "user_first": pl.Boolean,
        "moderator_text": pl.String,
        "moderator_message_type": pl.String,
        "moderator_fields": pl.String,
        "user_text": pl.String,
        "user_response_type": pl.String,
        "user_fields": pl.String,
        "provided_correction": pl.Boolean,
        "correction_magnitude": pl.String,
        "expressed_satisfaction": pl.Boolean,
        "validated_output": pl.Boolean,
        "new_strategic_context": pl.Boolean,
        "action_taken": pl.String,
        "significance_evaluation": pl.String,
        "proposed_action": pl.String,
        "moderator_reasoning": pl.String,
        "moderator_action": pl.String,
        "user_decision": pl.String,
        "decision_reasoning": pl.String,
        "decision_time_seconds": pl.Float64,
        "user_decision_fields": pl.String,
        "outcome": pl.String,
        "user_validated": pl.Boolean,
        "user_satisfaction_score": pl.Float64,
        "checkpoint_successful": pl.Boolean,
        "iteration_triggered": pl.Boolean,
        "phase_completed": pl.Boolean,
        "quality_signals": pl.String,
        "moderator_effectiveness": pl.String,
        "decision_confidence": pl.String,
        "context": pl.String,
        "checkpoint_timing": pl.String,
        "question_quality": pl.String,
        "user_engagement_level": pl.String,
        "feedback_specificity": pl.String,
        "engagement_indicators": pl.String,
        "synthesis_length_words": pl.Int64,
        "checkpoint_number": pl.Int64,
    }
)

SCENARIO_METADATA = pl.Schema(
    {
        "file": pl.String,
        "locator": pl.String,
        "record_index": pl.Int64,
        "state": pl.String,
        "scenario_id": pl.String,
        "entry_scenario_id": pl.String,
        "ts": pl.Datetime("us", "UTC"),
        "interaction_type": pl.String,
        "extra": pl.String,
        "total_phases": pl.Int64,
        "total_checkpoints": pl.Int64,
        "total_specialist_consultations": pl.Int64,
        "total_iterations_triggered": pl.Int64,
        "user_satisfaction_overall": pl.Float64,
        "completion_time_hours": pl.Float64,
        "scenario_successful": pl.Boolean,
        "metadata": pl.String,
    }
)

STUDY_SESSIONS_HISTORY = pl.Struct(
    {
        "role": pl.String,
        "text": pl.String,
        "extra": pl.String,
    }
)

STUDY_SESSIONS_IQL_Q_VALUES = pl.Struct(
    {
        "policy": pl.String,
        "value": pl.Float64,
    }
)

STUDY_SESSIONS_IQL = pl.Struct(
    {
        "turn": pl.Int64,
        "resident_message": pl.String,
        "operator_response": pl.String,
        "selected_policy": pl.String,
        "q_values": pl.List(STUDY_SESSIONS_IQL_Q_VALUES),
        "judge_stance": pl.String,
        "judge_confidence": pl.Float64,
        "judge_reasoning": pl.String,
        "ts": pl.Datetime("us", "UTC"),
        "extra": pl.String,
    }
)

STUDY_SESSIONS = pl.Schema(
    {
        "file": pl.String,
        "locator": pl.String,
        "copy_kind": pl.String,
        "session_id": pl.String,
        "participant_id": pl.String,
        "participant_id_from": pl.String,
        "character": pl.String,
        "conversation_type": pl.String,
        "persuasion_strategy": pl.String,
        "turn_count": pl.Int64,
        "history": pl.List(STUDY_SESSIONS_HISTORY),
        "iql": pl.List(STUDY_SESSIONS_IQL),
        "created_at": pl.Datetime("us", "UTC"),
        "ended_at": pl.Datetime("us", "UTC"),
        "scenario": pl.String,
        "extra": pl.String,
    }
)

STUDY_PARTICIPANTS = pl.Schema(
    {
        "file": pl.String,
        "locator": pl.String,
        "confirmation_number": pl.String,
        "participant_id": pl.String,
        "status": pl.String,
        "completed_at": pl.Datetime("us", "UTC"),
        "exit_at": pl.Datetime("us", "UTC"),
        "exit_page": pl.String,
        "n_conversations": pl.Int64,
        "survey": pl.String,
        "post_surveys": pl.String,
        "extra": pl.String,
    }
)

SOCIAL_RL_ROUNDS_MESSAGES = pl.Struct(
    {
        "agent_id": pl.String,
        "content": pl.String,
        "round_number": pl.Int64,
        "turn_number": pl.Int64,
        "ts": pl.Datetime("us", "UTC"),
        "prar_cue_used": pl.String,
        "internal": pl.Boolean,
        "message_role": pl.String,
        "context_frame": pl.String,
        "validation": pl.String,
        "extra": pl.String,
    }
)

SOCIAL_RL_ROUNDS_FEEDBACK = pl.Struct(
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

SOCIAL_RL_ROUNDS_POLICY_ADAPTATIONS = pl.Struct(
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

SOCIAL_RL_ROUNDS = pl.Schema(
    {
        "file": pl.String,
        "locator": pl.String,
        "run_dir": pl.String,
        "round_number": pl.Int64,
        "messages": pl.List(SOCIAL_RL_ROUNDS_MESSAGES),
        "feedback": pl.List(SOCIAL_RL_ROUNDS_FEEDBACK),
        "policy_adaptations": pl.List(SOCIAL_RL_ROUNDS_POLICY_ADAPTATIONS),
        "synthesis": pl.String,
        "duration_seconds": pl.Float64,
        "round_config": pl.String,
        "meta": pl.String,
        "extra": pl.String,
    }
)

SOCIAL_RL_META = pl.Schema(
    {
        "file": pl.String,
        "locator": pl.String,
        "run_dir": pl.String,
        "experiment_id": pl.String,
        "social_rl_version": pl.String,
        "model": pl.String,
        "framework": pl.String,
        "framework_option": pl.String,
        "prar_run_id": pl.String,
        "prar_state_file": pl.String,
        "written_at": pl.Datetime("us", "UTC"),
        "extra": pl.String,
    }
)

SOCIAL_RL_METRICS = pl.Schema(
    {
        "file": pl.String,
        "locator": pl.String,
        "run_dir": pl.String,
        "metrics": pl.String,
    }
)

SOCIAL_RL_PRAR_STATES = pl.Schema(
    {
        "file": pl.String,
        "locator": pl.String,
        "run_name": pl.String,
        "current_step": pl.String,
        "state": pl.String,
    }
)

SOCIAL_RL_POLICY_STATES_CUES = pl.Struct(
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
        "last_triggered": pl.Datetime("us", "UTC"),
        "thresholds": pl.String,
        "feedback_snapshot": pl.String,
        "extra": pl.String,
    }
)

SOCIAL_RL_POLICY_STATES = pl.Schema(
    {
        "file": pl.String,
        "locator": pl.String,
        "run_dir": pl.String,
        "shape": pl.String,
        "framework_option": pl.String,
        "framework_name": pl.String,
        "source_run_id": pl.String,
        "social_rl_version": pl.String,
        "written_at": pl.Datetime("us", "UTC"),
        "cues": pl.List(SOCIAL_RL_POLICY_STATES_CUES),
        "extra": pl.String,
    }
)

SOCIAL_RL_ATTACHMENTS = pl.Schema(
    {
        "file": pl.String,
        "locator": pl.String,
        "run_kind": pl.String,
        "run_dir": pl.String,
        "name": pl.String,
        "n_bytes": pl.Int64,
        "sha256": pl.String,
        "content": pl.String,
    }
)

DIALOGUE_CONVERSATIONS_TURNS = pl.Struct(
    {
        "role": pl.String,
        "content": pl.String,
        "ts": pl.Datetime("us", "UTC"),
        "extra": pl.String,
    }
)

DIALOGUE_CONVERSATIONS = pl.Schema(
    {
        "file": pl.String,
        "locator": pl.String,
        "line": pl.Int64,
        "dataset": pl.String,
        "conversation_id": pl.String,
        "turns": pl.List(DIALOGUE_CONVERSATIONS_TURNS),
        "tags": pl.List(pl.String),
        "quality": pl.Float64,
        "quality_raw": pl.String,
        "created_at": pl.Datetime("us", "UTC"),
        "updated_at": pl.Datetime("us", "UTC"),
        "record_hash": pl.String,
        "extra": pl.String,
    }
)

DIALOGUE_FEEDBACK_EVENTS = pl.Schema(
    {
        "file": pl.String,
        "locator": pl.String,
        "line": pl.Int64,
        "dataset": pl.String,
        "event_id": pl.String,
        "event_key": pl.String,
        "conversation_id": pl.String,
        "turn_index": pl.Int64,
        "rating": pl.Float64,
        "rating_raw": pl.String,
        "reward": pl.Float64,
        "comment": pl.String,
        "observed_at": pl.Datetime("us", "UTC"),
        "record_hash": pl.String,
        "extra": pl.String,
    }
)

DECISION_RECORDS = pl.Schema(
    {
        "file": pl.String,
        "locator": pl.String,
        "ordinal": pl.Int64,
        "file_kind": pl.String,
        "decision_id": pl.String,
        "session_id": pl.String,
        "context_id": pl.String,
        "sequence_number": pl.Int64,
        "actor_id": pl.String,
        "actor_type": pl.String,
        "actor_name": pl.String,
        "trigger_event_id": pl.String,
        "domain": pl.String,
        "action": pl.String,
        "confidence": pl.Float64,
        "reasoning": pl.String,
        "response_content": pl.String,
        "model_used": pl.String,
        "decision_details": pl.String,
        "suggested_action": pl.String,
        "companion_suggestion": pl.String,
        "was_followed": pl.Boolean,
        "alternatives": pl.String,
        "consensus": pl.String,
        "system_prompt": pl.String,
        "rag_context": pl.String,
        "rag_context_encoding": pl.String,
        "visual_context": pl.String,
        "coordination_snapshot": pl.String,
        "ambient_state": pl.String,
        "metadata": pl.String,
        "outcome": pl.String,
        "outcome_rating": pl.Float64,
        "outcome_was_good": pl.Boolean,
        "outcome_rated_by": pl.String,
        "outcome_rated_at": pl.Datetime("us", "UTC"),
        "follow_up": pl.String,
        "follow_up_conversation_continued": pl.Boolean,
        "follow_up_user_satisfaction": pl.Float64,
        "follow_up_mistake_corrected": pl.Boolean,
        "long_term_outcome": pl.String,
        "long_term_outcome_final": pl.String,
        "ts": pl.Datetime("us", "UTC"),
        "extra": pl.String,
    }
)

DECISION_RATING_EVENTS = pl.Schema(
    {
        "file": pl.String,
        "locator": pl.String,
        "line": pl.Int64,
        "event_id": pl.String,
        "decision_id": pl.String,
        "rating": pl.Float64,
        "scale": pl.String,
        "rated_by": pl.String,
        "rated_at": pl.Datetime("us", "UTC"),
        "reason": pl.String,
        "extra": pl.String,
    }
)

DECISION_REPLAY_RESULTS = pl.Schema(
    {
        "file": pl.String,
        "locator": pl.String,
        "line": pl.Int64,
        "decision_id": pl.String,
        "persona": pl.String,
        "model": pl.String,
        "shape": pl.String,
        "action": pl.String,
        "confidence": pl.Float64,
        "reasoning": pl.String,
        "response": pl.String,
        "extra": pl.String,
    }
)

OASST_TREES_MESSAGES_EMOJIS = pl.Struct(
    {
        "name": pl.String,
        "count": pl.Int64,
    }
)

OASST_TREES_MESSAGES_LABELS = pl.Struct(
    {
        "name": pl.String,
        "value": pl.Float64,
        "count": pl.Int64,
    }
)

OASST_TREES_MESSAGES = pl.Struct(
    {
        "message_id": pl.String,
        "parent_id": pl.String,
        "role": pl.String,
        "text": pl.String,
        "lang": pl.String,
        "rank": pl.Int64,
        "review_count": pl.Int64,
        "review_result": pl.Boolean,
        "deleted": pl.Boolean,
        "synthetic": pl.Boolean,
        "model_name": pl.String,
        "user_id": pl.String,
        "created_at": pl.Datetime("us", "UTC"),
        "emojis": pl.List(OASST_TREES_MESSAGES_EMOJIS),
        "labels": pl.List(OASST_TREES_MESSAGES_LABELS),
        "extra": pl.String,
        "depth": pl.Int64,
        "deleted_above": pl.Boolean,
        "unreviewed_above": pl.Boolean,
        "synthetic_above": pl.Boolean,
    }
)

OASST_TREES = pl.Schema(
    {
        "file": pl.String,
        "locator": pl.String,
        "line": pl.Int64,
        "dataset": pl.String,
        "message_tree_id": pl.String,
        "tree_state": pl.String,
        "messages": pl.List(OASST_TREES_MESSAGES),
        "record_hash": pl.String,
        "extra": pl.String,
    }
)

HH_RLHF_PAIRS_PROMPT = pl.Struct(
    {
        "role": pl.String,
        "text": pl.String,
    }
)

HH_RLHF_PAIRS = pl.Schema(
    {
        "file": pl.String,
        "locator": pl.String,
        "line": pl.Int64,
        "dataset": pl.String,
        "pair_id": pl.String,
        "prompt_id": pl.String,
        "prompt": pl.List(HH_RLHF_PAIRS_PROMPT),
        "chosen": pl.List(HH_RLHF_PAIRS_PROMPT),
        "rejected": pl.List(HH_RLHF_PAIRS_PROMPT),
        "notes": pl.List(pl.String),
        "extra": pl.String,
    }
)

BRONZE_SCHEMAS: dict[str, dict[str, pl.Schema]] = {
    "scenario": {
        "scenario_entries": SCENARIO_ENTRIES,
        "scenario_metadata": SCENARIO_METADATA,
    },
    "study": {
        "study_sessions": STUDY_SESSIONS,
        "study_participants": STUDY_PARTICIPANTS,
    },
    "social_rl": {
        "social_rl_rounds": SOCIAL_RL_ROUNDS,
        "social_rl_meta": SOCIAL_RL_META,
        "social_rl_metrics": SOCIAL_RL_METRICS,
        "social_rl_prar_states": SOCIAL_RL_PRAR_STATES,
        "social_rl_policy_states": SOCIAL_RL_POLICY_STATES,
        "social_rl_attachments": SOCIAL_RL_ATTACHMENTS,
    },
    "dialogue": {
        "dialogue_conversations": DIALOGUE_CONVERSATIONS,
        "dialogue_feedback_events": DIALOGUE_FEEDBACK_EVENTS,
    },
    "decision": {
        "decision_records": DECISION_RECORDS,
        "decision_rating_events": DECISION_RATING_EVENTS,
        "decision_replay_results": DECISION_REPLAY_RESULTS,
    },
    "oasst": {
        "oasst_trees": OASST_TREES,
    },
    "hh_rlhf": {
        "hh_rlhf_pairs": HH_RLHF_PAIRS,
    },
}
