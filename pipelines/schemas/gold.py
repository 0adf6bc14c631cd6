"""The gold data contract: signals a model is trained on, each traceable to the feedback behind it.

Descriptions here are the data dictionary (docs/data_dictionary.md is generated from them).
"""

from __future__ import annotations

import pandera.polars as pa
import polars as pl

from pipelines.config.names import SOURCES
from pipelines.schemas.strict import StrictModel

SPREAD_MEASURES = ("std", "majority_share")  # pipelines/gold/raters.py
REWARD_TARGETS = ("turn", "decision", "agent_round", "episode", "coach_step")
RULE_ID = r"^[a-z][a-z0-9_]*@[0-9]+$"


class TurnRewards(StrictModel):
    """One reward per rewarded target (turn, decision, agent round, or the episode's terminal
    reward) and rule."""

    reward_id: str = pa.Field(
        unique=True,
        description="`<reward_rule>:<target>:<target_id>`: one row per target and rule.",
    )
    episode_id: str = pa.Field(description="Episode of the rewarded target.")
    target: str = pa.Field(
        isin=REWARD_TARGETS,
        description="What is rewarded: turn, decision, agent_round, episode (terminal reward), "
        "or coach_step (Social RL: the coach's step for one agent in one round).",
    )
    target_id: str = pa.Field(
        description="turn_id, decision_id, `<episode_id>/<agent_id>` for an agent round or a "
        "coach step, or episode_id."
    )
    turn_id: str = pa.Field(
        nullable=True,
        description="Rewarded turn (for a decision: the turn that carried it out), where known.",
    )
    decision_id: str = pa.Field(
        nullable=True,
        description="Rewarded decision (study: the IQL step), where the target is one.",
    )
    agent_id: str = pa.Field(nullable=True, description="Rewarded agent (Social RL agent rounds).")
    round_number: pl.Int64 = pa.Field(
        nullable=True, description="Round of a rewarded Social RL agent round."
    )
    reward: pl.Float64 = pa.Field(
        in_range={"min_value": -1.0, "max_value": 1.0}, description="The reward, in [-1, 1]."
    )
    feedback_ids: pl.List(pl.String) = pa.Field(
        description="Every `feedback.feedback_id` the reward was computed from (sorted, distinct)."
    )
    n_signals: pl.Int64 = pa.Field(
        ge=1,
        description="Number of distinct signals combined (a dialogue event with rating and reward "
        "counts once).",
    )
    aggregation: str = pa.Field(
        description="How the signals were combined: single, mean, median, min, max, last, "
        "weighted_mean, transition, end_reason."
    )
    n_raters: pl.Int64 = pa.Field(
        nullable=True,
        ge=1,
        description="Distinct raters whose scores the reward combines (dialogue: events' "
        "`user_id`, else one per event; decision: one per rater kind; OpenAssistant: the emoji "
        "votes counted, or the label's reviewer count); null where the reward is not a "
        "combination of raters' scores (judge, outcome, system rules).",
    )
    rater_spread: pl.Float64 = pa.Field(
        nullable=True,
        in_range={"min_value": 0.0, "max_value": 1.0},
        description="How far apart the raters were, measured as `spread_measure` says; null when "
        "the source records only their mean (OpenAssistant labels) or without raters.",
    )
    spread_measure: str = pa.Field(
        nullable=True,
        isin=SPREAD_MEASURES,
        description="`std`: population standard deviation of the raters' values in [-1, 1] "
        "(numeric ratings); `majority_share`: share of the raters who gave the most frequent "
        "value (booleans, votes).",
    )
    reward_rule: str = pa.Field(
        str_matches=RULE_ID,
        description="Rule that produced the reward, `name@version` (see docs/rewards.md).",
    )
    rule_inputs: str = pa.Field(
        description="JSON object of the rule's inputs for this row (signal values, mapped "
        "components, parameters used)."
    )
    flags: pl.List(pl.String) = pa.Field(
        nullable=True,
        description="Caveats on the row, e.g. `rating_scale_inferred` (a decision rating whose "
        "scale was inferred from other ratings or wasGoodDecision).",
    )
    suggestion_followed: bool = pa.Field(
        nullable=True,
        description="Whether the human followed the moderator's / companion's suggestion (false = "
        "overrode it); null without one.",
    )
    selected_policy: str = pa.Field(
        nullable=True, description="Study: IQL policy the step selected."
    )
    q_selected: pl.Float64 = pa.Field(
        nullable=True, description="Study: Q-value of the selected policy."
    )
    best_alternative: str = pa.Field(
        nullable=True, description="Study: policy with the highest Q-value among the others."
    )
    q_best_alternative: pl.Float64 = pa.Field(
        nullable=True, description="Study: Q-value of the best alternative."
    )
    q_margin: pl.Float64 = pa.Field(
        nullable=True,
        description="Study: q_selected − q_best_alternative (negative: the policy did not pick its "
        "argmax).",
    )


class EpisodeOutcomes(StrictModel):
    """One row per silver episode: how it ended, its return, terminal reward and signal counts."""

    episode_id: str = pa.Field(unique=True, description="Episode (as in silver `episodes`).")
    source: str = pa.Field(isin=SOURCES, description="Source of the episode.")
    end_reason: str = pa.Field(
        nullable=True,
        description="End reason from silver (study: derived from the judge trail; scenario: "
        "success / failure from the metadata line, else the state).",
    )
    n_rewards: pl.Int64 = pa.Field(
        ge=0, description="Rows in `turn_rewards` for the episode (terminal included)."
    )
    return_: pl.Float64 = pa.Field(
        nullable=True,
        alias="return",
        description="Sum of every reward of the episode (step rewards + terminal reward); null "
        "without rewards.",
    )
    terminal_reward: pl.Float64 = pa.Field(
        nullable=True,
        in_range={"min_value": -1.0, "max_value": 1.0},
        description="Episode-level reward (target = episode), mean if several rules give one; null "
        "without one.",
    )
    terminal_rule: str = pa.Field(
        nullable=True, description="Rule(s) of the terminal reward, comma-separated."
    )
    n_signals: pl.Int64 = pa.Field(
        ge=0, description="Feedback rows about the episode (any target)."
    )
    n_human_signals: pl.Int64 = pa.Field(ge=0, description="... of which source_kind = human.")
    n_judge_signals: pl.Int64 = pa.Field(ge=0, description="... of which source_kind = judge.")
    n_system_signals: pl.Int64 = pa.Field(ge=0, description="... of which source_kind = system.")
    n_self_signals: pl.Int64 = pa.Field(ge=0, description="... of which source_kind = self.")
    n_outcome_signals: pl.Int64 = pa.Field(ge=0, description="... of which source_kind = outcome.")
    outcome: str = pa.Field(
        nullable=True,
        description="JSON outcome record where the source has one (scenario: its scenario_metadata "
        "line).",
    )


class QualitySignals(StrictModel):
    """Automatic signals per turn, computed from the text and timestamps alone."""

    turn_id: str = pa.Field(unique=True, description="Turn (as in silver `turns`).")
    episode_id: str = pa.Field(description="Episode of the turn.")
    turn_index: pl.Int64 = pa.Field(ge=0, description="0-based position in the episode.")
    role: str = pa.Field(description="Canonical role of the turn.")
    word_count: pl.Int64 = pa.Field(
        ge=0,
        description="Words in the text (runs of letters, digits, apostrophes); 0 for empty text.",
    )
    response_seconds: pl.Float64 = pa.Field(
        nullable=True,
        ge=0,
        description="Seconds since the previous turn of the episode, or the time the source itself "
        "recorded (a scenario user turn: user_decision.decision_time_seconds); null when unknown "
        "(a missing timestamp, time running backwards, two turns logged with one timestamp).",
    )
    is_correction: bool = pa.Field(
        nullable=True,
        description="Turn uses the correction lexicon (whole word, case-insensitive); null for "
        "roles not scanned.",
    )
    is_new_context: bool = pa.Field(
        nullable=True, description="Turn uses the new-context lexicon; null for roles not scanned."
    )
    json_requested: bool = pa.Field(
        description="An assistant turn whose latest preceding user turn asks for JSON."
    )
    json_valid: bool = pa.Field(
        nullable=True,
        description="For json_requested turns: the text (optionally in a ``` fence) parses as a "
        "JSON object or array; else null.",
    )
    echo_rate: pl.Float64 = pa.Field(
        nullable=True,
        in_range={"min_value": 0.0, "max_value": 1.0},
        description="Assistant turns: share of the reply's distinct words found in the latest "
        "preceding user turn; null without one.",
    )


class AgentRoundDeltas(StrictModel):
    """Social RL agent rounds with round-over-round deltas, next to the deltas the source
    reports."""

    episode_id: str = pa.Field(description="Episode of the round (one experiment round).")
    experiment_id: str = pa.Field(
        description="Experiment the round belongs to (the episode's group_id)."
    )
    agent_id: str = pa.Field(description="Agent id.")
    round_number: pl.Int64 = pa.Field(ge=0, description="Round number within the experiment.")
    previous_round_number: pl.Int64 = pa.Field(
        nullable=True,
        description="The agent's previous round in the experiment; null on its first round.",
    )
    engagement: pl.Float64 = pa.Field(nullable=True, description="Engagement this round.")
    theoretical_alignment: pl.Float64 = pa.Field(
        nullable=True, description="Theoretical alignment this round."
    )
    contribution_value: pl.Float64 = pa.Field(
        nullable=True, description="Contribution value this round."
    )
    engagement_delta: pl.Float64 = pa.Field(
        nullable=True, description="Computed: engagement − the agent's previous-round engagement."
    )
    alignment_delta: pl.Float64 = pa.Field(
        nullable=True, description="Computed: theoretical_alignment − previous round's."
    )
    contribution_delta: pl.Float64 = pa.Field(
        nullable=True, description="Computed: contribution_value − previous round's."
    )
    reported_engagement_delta: pl.Float64 = pa.Field(
        nullable=True, description="Engagement delta the source itself reports (silver, unchanged)."
    )
    reported_alignment_delta: pl.Float64 = pa.Field(
        nullable=True, description="Alignment delta the source itself reports."
    )
    reported_contribution_delta: pl.Float64 = pa.Field(
        nullable=True, description="Contribution delta the source itself reports."
    )
    deltas_agree: bool = pa.Field(
        nullable=True,
        description="All reported deltas equal the computed ones (within 1e-6); null when nothing "
        "to compare.",
    )


class Splits(StrictModel):
    """One row per `group_id`: its split, from a stable hash of (salt, split_group) into 10 000
    buckets."""

    group_id: str = pa.Field(
        unique=True,
        description="Split unit (silver `episodes.group_id`); every episode of it is in this "
        "split.",
    )
    bucket: pl.Int64 = pa.Field(
        in_range={"min_value": 0, "max_value": 9999},
        description="First 8 bytes of sha256(salt NUL split_group), big-endian, mod 10 000.",
    )
    split: str = pa.Field(
        isin=("train", "validation", "test"),
        description="train / validation / test: cumulative bucket ranges by the configured ratios, "
        "in that order.",
    )
    salt: str = pa.Field(
        description="Salt of the hash (`[splits] salt` in turnlake.toml); changing it reshuffles "
        "every group."
    )
    split_group: str = pa.Field(
        description="What the bucket hashes: the group itself, or the smallest group id of the "
        "groups its prompts' near-duplicate clusters join it to (`[splits.near_duplicates]`), "
        "which all share its split.",
    )


class RaterAgreement(StrictModel):
    """Krippendorff's alpha per score name and level of measurement, over every item (a judged
    target) rated by two or more raters in silver `feedback` (pipelines/gold/agreement.py).
    Computed when the warehouse views are written and when a release is written; not stored in
    gold."""

    name: str = pa.Field(description="Score name (a table of scores.toml).")
    level: str = pa.Field(
        nullable=True,
        isin=("nominal", "ordinal", "interval", "ratio"),
        description="Level of measurement, from the type of the scale the ratings are on: "
        "categories, booleans and votes nominal, a rank ordinal, numbers interval (ratio where "
        "the name's range starts at 0); null for free text.",
    )
    alpha: pl.Float64 = pa.Field(
        nullable=True,
        in_range={"min_value": -1.0, "max_value": 1.0},
        description="Krippendorff's alpha (1 = perfect agreement, 0 = chance, below 0 = "
        "systematic disagreement); null when not computable.",
    )
    n_items: pl.Int64 = pa.Field(ge=0, description="Items rated by 2 or more raters.")
    n_ratings: pl.Int64 = pa.Field(ge=0, description="Ratings of those items (one per rater).")
    max_raters: pl.Int64 = pa.Field(ge=0, description="Most raters of one item.")
    status: str = pa.Field(
        isin=("computed", "not computable"), description="Whether alpha could be computed."
    )
    reason: str = pa.Field(
        nullable=True,
        description="Why alpha is not computable (no item rated twice, one value only, only a "
        "mean recorded, free text).",
    )


# Tables computed from the layers when the warehouse views are written (not stored layers).
WAREHOUSE_MODELS: dict[str, type[pa.DataFrameModel]] = {"rater_agreement": RaterAgreement}

GOLD_MODELS: dict[str, type[pa.DataFrameModel]] = {
    "turn_rewards": TurnRewards,
    "episode_outcomes": EpisodeOutcomes,
    "quality_signals": QualitySignals,
    "agent_round_deltas": AgentRoundDeltas,
    "splits": Splits,  # its own asset (gold_splits) and snapshot layer, not built by build_gold
}
