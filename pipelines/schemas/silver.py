"""The silver data contract: one Pandera model per canonical table (DESIGN §2).

Descriptions here are the data dictionary (docs/data_dictionary.md is generated from them).
"""

from __future__ import annotations

import pandera.polars as pa
import polars as pl

from pipelines.config.names import SOURCES
from pipelines.schemas.strict import StrictModel

UTC_TS = pl.Datetime("us", "UTC")
CANDIDATE = pl.List(pl.Struct({"action": pl.String, "value": pl.Float64}))

ROLES = ("user", "assistant", "system", "agent")
FEEDBACK_TARGETS = ("turn", "episode", "decision", "agent_round")
FEEDBACK_SOURCE_KINDS = ("human", "judge", "system", "self", "outcome")


class Episodes(StrictModel):
    """One conversation, scenario, experiment round or decision session."""

    episode_id: str = pa.Field(unique=True, description="Deterministic id: `<source>:<native id>`.")
    source: str = pa.Field(isin=SOURCES, description="Source adapter that produced the episode.")
    native_id: str = pa.Field(
        description="The source's own id (scenario_id, session_id, run folder + round, "
        "conversation_id, decision sessionId)."
    )
    group_id: str = pa.Field(
        description="Unit that must never straddle splits (participant, scenario, experiment, "
        "conversation, decision session; decision sessions sharing a human actor form one group)."
    )
    started_at: UTC_TS = pa.Field(
        nullable=True, description="First known time of the episode (UTC)."
    )
    ended_at: UTC_TS = pa.Field(nullable=True, description="Last known time of the episode (UTC).")
    n_turns: pl.Int64 = pa.Field(ge=0, description="Number of rows in `turns` for this episode.")
    end_reason: str = pa.Field(
        nullable=True,
        description="Why the episode ended (study: derived from the judge trail: agreement, "
        "refusal, max_turns, unknown).",
    )
    attributes: str = pa.Field(
        nullable=True,
        description="JSON object of source-specific metadata and unmapped raw fields.",
    )
    source_file: str = pa.Field(
        description="Raw file (relative to the raw root) the episode's chosen copy came from."
    )


class Turns(StrictModel):
    """One utterance or message, in source order within its episode."""

    turn_id: str = pa.Field(
        unique=True, description="Deterministic id: `<episode_id>#<turn_index>`."
    )
    episode_id: str = pa.Field(description="Episode the turn belongs to.")
    turn_index: pl.Int64 = pa.Field(
        ge=0,
        description="0-based position in source order (a dialogue's `turns[i]`, a session's "
        "`history[i]`).",
    )
    role: str = pa.Field(
        isin=ROLES, description="Canonical role: user, assistant, system or agent."
    )
    native_role: str = pa.Field(
        nullable=True,
        description="Role as the source names it (operator, resident, moderator, Worker, ...).",
    )
    actor_id: str = pa.Field(
        nullable=True,
        description="Who spoke: participant, agent id, persona or user id where known.",
    )
    text: str = pa.Field(nullable=True, description="Utterance text as recorded.")
    ts: UTC_TS = pa.Field(
        nullable=True, description="When the turn was recorded (UTC), where known."
    )
    internal: bool = pa.Field(
        description="True for messages not shown to other participants (e.g. Social RL coach "
        "messages)."
    )
    attributes: str = pa.Field(
        nullable=True, description="JSON object of turn-level metadata and unmapped raw fields."
    )
    parent_turn_id: str = pa.Field(
        nullable=True,
        description="Turn this one replies to, where the source is a tree (OASST message trees, "
        "HH-RLHF pairs: two answers to one prompt); null for linear sources and for a tree's root.",
    )


class Feedback(StrictModel):
    """One signal (rating, reward, judge stance, outcome, ...) about one target."""

    feedback_id: str = pa.Field(
        unique=True, description="Idempotent id: hash of the signal's content and target."
    )
    episode_id: str = pa.Field(description="Episode the signal is about.")
    turn_id: str = pa.Field(
        nullable=True, description="Turn the signal judges, if it targets a turn."
    )
    decision_id: str = pa.Field(
        nullable=True, description="Decision the signal judges, if it targets a decision."
    )
    agent_id: str = pa.Field(
        nullable=True, description="Agent the signal judges, if it targets an agent round."
    )
    target: str = pa.Field(
        isin=FEEDBACK_TARGETS, description="What is judged: turn, episode, decision or agent_round."
    )
    name: str = pa.Field(
        description="Signal name (rating, reward, user_validated, judge_stance, engagement, ...): "
        "one with a score config in scores.toml; other feedback is quarantined."
    )
    value_num: pl.Float64 = pa.Field(
        nullable=True, description="Numeric value, if the signal is numeric or boolean (1/0)."
    )
    value_text: str = pa.Field(
        nullable=True, description="Text or category value (e.g. a judge stance, a comment)."
    )
    scale: str = pa.Field(
        description="Scale of value_num / value_text: `[-1,1]`, `[0,1]`, `1-5`, `bool`, "
        "`category`, `count`, `rank`, `text`; `unknown` for a decision rating whose scale no "
        "evidence settles, `as_recorded`, `number` or `raw` for a number whose scale the source "
        "does not state. Each name's allowed scales: scores.toml (docs/concepts/scores.md)."
    )
    source_kind: str = pa.Field(
        isin=FEEDBACK_SOURCE_KINDS,
        description="Who produced it: human, judge, system, self or outcome.",
    )
    observed_at: UTC_TS = pa.Field(
        nullable=True, description="When the signal was recorded (UTC), where known."
    )
    attributes: str = pa.Field(
        nullable=True,
        description="JSON object with the signal's context (reasoning, comment, raw fields).",
    )


class Decisions(StrictModel):
    """One choice among actions, with the alternatives and the context the decider saw."""

    decision_id: str = pa.Field(
        unique=True,
        description="The decision point's own id where the source has one, else deterministic.",
    )
    episode_id: str = pa.Field(description="Episode the decision belongs to.")
    turn_id: str = pa.Field(
        nullable=True,
        description="Turn that carried out the decision (e.g. the operator reply an IQL step "
        "chose).",
    )
    actor_id: str = pa.Field(
        nullable=True, description="Who decided (persona, participant, agent)."
    )
    actor_type: str = pa.Field(nullable=True, description="human, ai, policy, moderator, ...")
    action: str = pa.Field(
        nullable=True,
        description="The chosen action (IQL policy, post/silent, proposed significance, ...).",
    )
    candidates: CANDIDATE = pa.Field(
        nullable=True,
        description="All options considered with their values (Q-values, alternatives).",
    )
    confidence: pl.Float64 = pa.Field(
        nullable=True, description="Decider's confidence, where recorded."
    )
    reasoning: str = pa.Field(
        nullable=True, description="Decider's stated reasoning, where recorded."
    )
    context_hash: str = pa.Field(
        nullable=True, description="sha256 of the context the decider saw; key into `contexts`."
    )
    suggested_action: str = pa.Field(
        nullable=True, description="Action a companion/moderator suggested, if any."
    )
    suggestion_followed: bool = pa.Field(
        nullable=True,
        description="Whether the action equals the suggestion (null without a suggestion).",
    )
    ts: UTC_TS = pa.Field(nullable=True, description="When the decision was made (UTC).")
    attributes: str = pa.Field(
        nullable=True, description="JSON object of decision metadata and unmapped raw fields."
    )


class Contexts(StrictModel):
    """A distinct context blob (system prompt, RAG context, full decision context), stored once."""

    context_hash: str = pa.Field(
        unique=True,
        description="sha256 of `context`: content-addressed, one row per distinct blob.",
    )
    context: str = pa.Field(description="The context as JSON text (decompressed).")
    n_bytes: pl.Int64 = pa.Field(ge=0, description="Size of `context` in UTF-8 bytes.")


class AgentRounds(StrictModel):
    """One agent in one round of a Social RL experiment, with its feedback vector."""

    episode_id: str = pa.Field(description="Episode of the round (one experiment round).")
    agent_id: str = pa.Field(description="Agent id as the source writes it (e.g. `Worker+Alice`).")
    round_number: pl.Int64 = pa.Field(ge=0, description="Round number within the experiment.")
    role: str = pa.Field(
        nullable=True, description="Agent role (prefix of `Role+Name` ids, or from the source)."
    )
    engagement: pl.Float64 = pa.Field(
        nullable=True, description="Feedback vector: engagement in [0,1]."
    )
    theoretical_alignment: pl.Float64 = pa.Field(
        nullable=True, description="Feedback vector: theoretical alignment in [0,1]."
    )
    contribution_value: pl.Float64 = pa.Field(
        nullable=True, description="Feedback vector: contribution value in [0,1]."
    )
    direct_references: pl.Int64 = pa.Field(
        nullable=True, description="Feedback vector: times the agent was referenced."
    )
    response_received: pl.Int64 = pa.Field(
        nullable=True, description="Feedback vector: responses the agent received."
    )
    analyst_mentions: pl.Int64 = pa.Field(
        nullable=True, description="Feedback vector: mentions by the analyst."
    )
    synthesis_inclusion: pl.Float64 = pa.Field(
        nullable=True, description="Feedback vector: share included in the round synthesis."
    )
    concepts_embodied: pl.List(pl.String) = pa.Field(
        nullable=True, description="Feedback vector: theory concepts the agent embodied."
    )
    reported_engagement_delta: pl.Float64 = pa.Field(
        nullable=True,
        description="Engagement delta the source itself reports in policy_adaptations.",
    )
    reported_alignment_delta: pl.Float64 = pa.Field(
        nullable=True,
        description="Alignment delta the source itself reports in policy_adaptations.",
    )
    reported_contribution_delta: pl.Float64 = pa.Field(
        nullable=True,
        description="Contribution delta the source itself reports in policy_adaptations.",
    )
    attributes: str = pa.Field(
        nullable=True, description="JSON object of other feedback fields and adaptations."
    )


class Quarantine(StrictModel):
    """Every rejected raw record or file, with the reason: nothing is lost silently."""

    source: str = pa.Field(isin=SOURCES, description="Source whose record was rejected.")
    file: str = pa.Field(description="Raw file (relative to the raw root).")
    locator: str = pa.Field(
        description="Where in the file: line and byte offset, row id, or record path."
    )
    error_kind: str = pa.Field(
        description="Reason from a fixed vocabulary (invalid_json, truncated, missing_field, "
        "bad_type, bad_value, orphan, duplicate_conflict, too_large, ...)."
    )
    message: str = pa.Field(description="What is wrong, in words a person understands.")
    raw: str = pa.Field(nullable=True, description="Truncated copy of the rejected raw record.")
    stage: str = pa.Field(
        isin=("parse", "silver"),
        description="parse: rejected reading the file; silver: rejected when building canonical "
        "tables.",
    )
    run_id: str = pa.Field(nullable=True, description="Dagster run that rejected it.")


class SurveyAnswers(StrictModel):
    """One survey answer of one study participant (pre-survey sections and post-surveys). Local
    only: releases leave it out unless `[privacy] include_surveys` is true, and then
    pseudonymized."""

    participant_id: str = pa.Field(description="Study participant (real id: silver is local data).")
    confirmation_number: str = pa.Field(
        nullable=True, description="The participant file's confirmation number (CCC### / INC###)."
    )
    session_id: str = pa.Field(
        nullable=True,
        description="Conversation the post-survey answer is about; null for the pre-survey.",
    )
    section: str = pa.Field(
        description="background, personality, moral, specialNeeds or post_survey."
    )
    question: str = pa.Field(
        description="Question key as the survey writes it (q1, age, willing, ...)."
    )
    answer_text: str = pa.Field(
        nullable=True, description="Answer as recorded (numbers stored as strings stay text here)."
    )
    source_file: str = pa.Field(
        description="Raw participant file the answer came from (the last file wins)."
    )
    answer_num: pl.Float64 = pa.Field(
        nullable=True, description="Answer as a number when it is one (Likert items, age)."
    )
    answered_at: UTC_TS = pa.Field(
        nullable=True, description="When the survey was submitted (UTC), where recorded."
    )


class PolicyStates(StrictModel):
    """One cue of one role's policy in a Social RL run's saved policy state (policy_state.json)."""

    policy_state_id: str = pa.Field(
        unique=True,
        description="`social_rl:<run_dir>/policy_state#<role>/<cue index>` "
        "(`-`: a role without cues).",
    )
    run_dir: str = pa.Field(description="Run folder under outputs/ the policy state belongs to.")
    group_id: str = pa.Field(
        description="The run's split group (`experiment:<id>`, else `run:<run_dir>`), "
        "as its episodes."
    )
    role: str = pa.Field(
        description="Role the policy is for (per-role shape: its key, e.g. `Worker` or "
        "`challenge_activation`)."
    )
    policy_name: str = pa.Field(
        nullable=True, description="Policy name (per-role shape, e.g. `worker_baseline`)."
    )
    cue_index: pl.Int64 = pa.Field(
        nullable=True,
        ge=0,
        description="Position of the cue in the role's policy; null without cues.",
    )
    cue_id: str = pa.Field(
        nullable=True, description="Cue id (documented shape) or the cue's mode (per-role shape)."
    )
    mode: str = pa.Field(
        nullable=True, description="Reasoning mode (observe, reflect, connect, challenge, ...)."
    )
    text: str = pa.Field(nullable=True, description="Cue text (per-role shape).")
    active: bool = pa.Field(
        nullable=True,
        description="Whether the cue is active (documented shape); null where the shape does "
        "not record it.",
    )
    intensity: pl.Float64 = pa.Field(nullable=True, description="Cue intensity in [0,1].")
    grounding: str = pa.Field(
        nullable=True, description="Theoretical grounding of the cue (per-role shape)."
    )
    last_triggered: UTC_TS = pa.Field(
        nullable=True, description="When the cue last fired (documented shape), UTC."
    )
    thresholds: str = pa.Field(
        nullable=True, description="The policy's feedback thresholds as JSON (per-role shape)."
    )
    feedback_snapshot: str = pa.Field(
        nullable=True, description="The role's feedback snapshot as JSON (documented shape)."
    )
    shape: str = pa.Field(
        isin=("documented", "per_role"), description="Which policy_state shape the file has."
    )
    framework_option: str = pa.Field(nullable=True, description="Framework option (A-E).")
    source_run_id: str = pa.Field(nullable=True, description="PRAR run the policies came from.")
    social_rl_version: str = pa.Field(nullable=True, description="social_rl_version as written.")
    written_at: UTC_TS = pa.Field(nullable=True, description="When the state was saved (UTC).")
    source_file: str = pa.Field(description="Raw file (relative to the raw root).")
    attributes: str = pa.Field(
        nullable=True, description="JSON object of the framework name and unmapped raw fields."
    )


class Replays(StrictModel):
    """What another persona or model chose for a decision (`turnlake decision replay`, results
    under `<raw root>/replays/`), beside the original choice."""

    replay_id: str = pa.Field(unique=True, description="Hash of the decision id and persona.")
    decision_id: str = pa.Field(description="The decision replayed; key into `decisions`.")
    episode_id: str = pa.Field(description="Episode of the decision.")
    persona: str = pa.Field(description="Persona replayed.")
    model: str = pa.Field(nullable=True, description="Model that answered, where recorded.")
    action: str = pa.Field(description="The action the persona chose.")
    confidence: pl.Float64 = pa.Field(nullable=True, description="Its confidence, where given.")
    reasoning: str = pa.Field(nullable=True, description="Its stated reasoning, where given.")
    response: str = pa.Field(nullable=True, description="The text it would have posted.")
    original_action: str = pa.Field(nullable=True, description="The action actually taken.")
    agrees: bool = pa.Field(
        nullable=True, description="action = original_action (trimmed, without case)."
    )
    domain: str = pa.Field(nullable=True, description="Domain of the decision (chat, code, …).")
    shape: str = pa.Field(
        isin=("plain", "openai_batch"), description="Raw line shape the result came in."
    )
    source_file: str = pa.Field(description="Raw file (relative to the raw root).")
    locator: str = pa.Field(description="`line N (byte M)` in that file.")


SILVER_MODELS: dict[str, type[pa.DataFrameModel]] = {
    "episodes": Episodes,
    "turns": Turns,
    "feedback": Feedback,
    "decisions": Decisions,
    "contexts": Contexts,
    "agent_rounds": AgentRounds,
    "quarantine": Quarantine,
    "survey_answers": SurveyAnswers,
    "policy_states": PolicyStates,
    "replays": Replays,
}
