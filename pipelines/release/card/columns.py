"""What every released dataset is for and what each of its columns means: the one source of truth
for the dataset card (render.py) and the data dictionary (reports/dictionary.py)."""

from __future__ import annotations

from pipelines.config.names import SOURCES

DATASET_PURPOSE = {
    "sft": "Conversation prefixes ending in an assistant (or agent) message, for supervised "
    "fine-tuning (TRL `SFTTrainer`, conversational format: `messages`).",
    "preference": "Pairs of a preferred and a rejected answer to the same prompt (TRL "
    "`DPOTrainer`: `prompt`, `chosen`, `rejected`): corrections, overridden companion "
    "suggestions, rated alternatives, ranked OASST siblings, HH-RLHF pairs.",
    "kto": "Single answers with a thumbs-up/down label (TRL `KTOTrainer`: `prompt`, "
    "`completion`, `label`).",
    "rl_steps": "Offline-RL steps with RLDS semantics (`observation`, `action`, `reward`, "
    "`discount`, `is_first`, `is_last`, `is_terminal`); Q-values / behaviour policy where the "
    "source logged them.",
    "decisions": "Decision points: the context (or its hash) and coordination state → action, "
    "confidence, outcome.",
    "stepwise": "Step-level labels for a process reward model (TRL `PRMTrainer`, stepwise "
    "supervision: `prompt`, `completions`, `labels`): the study operator's replies labelled by the "
    "stance they caused, Social RL agents' rounds by their feedback.",
    "surveys": "Study survey answers (only with `[privacy] include_surveys = true`), "
    "pseudonymized.",
}

COMMON_COLUMNS = {
    "split": "train / validation / test, assigned per group (never per row).",
    "episode_id": "Canonical episode id (`<source>:<native id>`).",
    "group_id": "Leakage unit (participant, scenario, experiment, conversation, decision "
    "session, message tree): all rows of a group are in one split.",
    "source": "Raw source the row came from: one of " + ", ".join(f"`{s}`" for s in SOURCES) + ".",
    "prompt_hash": "sha256 of the exact prompt text (canonical JSON of the prompt messages); no "
    "prompt appears in two splits.",
    "dedup_cluster": "Near-duplicate cluster of the episode's first user prompt (MinHash of its "
    "word shingles, `[splits.near_duplicates]`), keyed like `prompt_hash`: rows sharing it ask "
    "near-duplicate prompts and are in one split; null where the source's episodes start from no "
    "user prompt (study, decision, scenario, Social RL).",
    "reward": "Reward in [-1, 1] from the gold reward rules (null where no signal).",
    "reward_rule": "Rule that produced the reward, `name@version` (see `rewards` in manifest.json "
    "config).",
    "feedback_ids": "Feedback rows the reward was computed from (traceable to the human/judge "
    "signal).",
    "turn_id": "Silver turn the row is about (its final / chosen turn), null where the row is "
    "about a decision.",
    "decision_id": "Silver decision the row is about, null where it is about a turn.",
    "actor_id": "Who spoke or decided (pseudonymized for people).",
}

_CHAT = "list of `{role, content}` messages in the chat shape (see Chat shape)"

DATASET_COLUMNS: dict[str, dict[str, str]] = {
    "sft": {
        "turn_index": "0-based position of the final turn in its episode.",
        "messages": f"The conversation up to and including the trained-on turn: {_CHAT}.",
        "reward_target": "What the reward is about: `turn` (the final turn's own reward) or "
        "`agent_round` (a Social RL agent's round reward).",
    },
    "preference": {
        "prompt": f"What both answers respond to: {_CHAT}.",
        "chosen": "The preferred answer (assistant messages).",
        "rejected": "The rejected answer (assistant messages).",
        "chosen_turn_id": "Silver turn of the chosen answer, where it is a turn.",
        "rejected_turn_id": "Silver turn of the rejected answer, where it is a turn.",
        "evidence_turn_ids": "Turns that make the preference (the user's correcting turns).",
        "reward_chosen": "Known reward of the chosen answer (null: unknown).",
        "reward_rejected": "Known reward of the rejected answer (null: unknown); the margin is "
        "`reward_chosen - reward_rejected`.",
        "pair_kind": "Evidence of the pair: `correction`, `override`, `rated_alternatives`, "
        "`sibling_rank`, `hh_rlhf`.",
        "chosen_decision_id": "Decision of the chosen answer, where it is a decision.",
        "rejected_decision_id": "Decision of the rejected answer, where it is a decision.",
        "chosen_prompt_hash": "sha256 of the prompt the chosen answer answered.",
        "rejected_prompt_hash": "sha256 of the prompt the rejected answer answered (equal to "
        "`chosen_prompt_hash`).",
    },
    "kto": {
        "prompt": f"What the completion responds to: {_CHAT}.",
        "completion": "The rated answer (assistant messages).",
        "kind": "`turn` (a rated assistant turn) or `decision` (a rated decision).",
        "outcome_was_good": "The decision source's own `wasGoodDecision`, where given.",
        "label": "Desirable (true, reward > 0) or undesirable (false, reward < 0; reward 0 only "
        "with `kto_include_neutral`).",
    },
    "rl_steps": {
        "step": "0-based step number within the RL episode.",
        "observation": "What the actor saw before acting (text or JSON).",
        "action": "What the actor did (IQL policy, decision action, agent message, adaptation).",
        "reward": "Reward that followed the action (0.0 where unknown, then `reward_rule` null).",
        "discount": "0 on a terminal step, otherwise 1.",
        "is_first": "First step of the episode.",
        "is_last": "Last step of the episode (exactly one per episode).",
        "is_terminal": "The episode really ended here (study agreement or refusal).",
        "q_values": "Q-value per candidate action `{action, value}`, where logged (study IQL).",
        "policy": "Behaviour policy: `iql`, `coach`, or the acting agent's id.",
        "source_episode_id": "Silver episode the step came from.",
        "episode_id": "RL episode id (a session, an actor of a decision session, an agent view "
        "of a run).",
    },
    "decisions": {
        "actor_type": "`human`, `ai` persona or `coach`.",
        "ts": "When the decision was made (UTC).",
        "context_hash": "sha256 of the context JSON (contexts are stored once).",
        "context": "The full context the actor saw (JSON text).",
        "ambient_state": "Ambient state part of the context (JSON text).",
        "coordination_state": "Coordination snapshot part of the context (JSON text).",
        "prompt": f"The decision as a chat prompt: {_CHAT}.",
        "action": "The action chosen.",
        "response": "Text the actor posted with the action, if any.",
        "confidence": "The actor's stated confidence in [0, 1].",
        "reasoning": "The actor's stated reasoning.",
        "candidates": "Alternatives considered, `{action, value}`.",
        "suggested_action": "A companion AI's suggested action, where one was shown.",
        "suggestion_followed": "Whether the actor followed the suggestion.",
        "outcome_reward": "The later outcome rating as a reward in [-1, 1].",
        "outcome_was_good": "The source's own `wasGoodDecision`, where given.",
    },
    "stepwise": {
        "prompt": "What came before the first step (plain text): the study's scenario and the "
        "operator's opening; for Social RL the framework and whose turns the steps are.",
        "completions": "The steps, in order: each the conversation since the actor's previous "
        "step as `<speaker>: <text>` lines, ending with the actor's judged message(s).",
        "labels": "One per completion: true when the step is good by `label_rule` (study: the "
        "stance did not regress and the reply did not end the session in a refusal; Social RL: "
        "the round's feedback mean above its threshold).",
        "rewards": "One per completion: the step reward the label thresholds (study: stance "
        "change + terminal reward; Social RL: the round's feedback reward).",
        "turn_ids": "One per completion: the silver turn of the actor's last message of the step.",
        "decision_ids": "One per completion: the IQL decision that chose the reply (study), else "
        "null.",
        "label_rule": "Step-label rule, `name@version` (`[labels] stepwise` in the `rewards` "
        "config of manifest.json).",
        "reward_rule": "Reward rules of the steps' rewards, `name@version`, comma-joined.",
        "source_episode_id": "Silver episode of the first step (a Social RL example spans its "
        "run's rounds).",
        "episode_id": "Example id: the study session, or `social_rl:<run>@<agent>`.",
        "prompt_hash": "sha256 of the whole example (prompt and completions); no example appears "
        "in two splits.",
    },
    "surveys": {
        "participant_id": "Study participant (pseudonym).",
        "confirmation_number": "The participant file's confirmation number.",
        "session_id": "Conversation a post-survey answer is about; null for the pre-survey.",
        "section": "background, personality, moral, specialNeeds or post_survey.",
        "question": "Question key as the survey writes it.",
        "answer_text": "Answer as recorded.",
        "answer_num": "Answer as a number when it is one.",
        "answered_at": "When the survey was submitted (UTC), where recorded.",
    },
}


def column_description(dataset: str, column: str) -> str:
    """The meaning of one released column ('' when none is written down: a test forbids it)."""
    return DATASET_COLUMNS.get(dataset, {}).get(column) or COMMON_COLUMNS.get(column, "")


# Every column of every released dataset, in file order (a test compares them with a built
# release, so a column added by an export builder cannot ship undescribed).
_IDS = ("split", "episode_id", "group_id", "source", "prompt_hash", "dedup_cluster")
RELEASE_COLUMNS: dict[str, tuple[str, ...]] = {
    "sft": (
        *_IDS,
        *("turn_id", "turn_index", "actor_id", "messages", "reward", "reward_rule"),
        *("feedback_ids", "reward_target"),
    ),
    "preference": (
        *_IDS,
        *("prompt", "chosen", "rejected", "chosen_turn_id", "rejected_turn_id"),
        *("evidence_turn_ids", "reward_chosen", "reward_rejected", "feedback_ids"),
        *("reward_rule", "pair_kind", "decision_id", "chosen_decision_id"),
        *("rejected_decision_id", "chosen_prompt_hash", "rejected_prompt_hash"),
    ),
    "kto": (
        *_IDS,
        *("turn_id", "prompt", "completion", "reward", "reward_rule", "feedback_ids", "kind"),
        *("decision_id", "outcome_was_good", "label"),
    ),
    "rl_steps": (
        *_IDS,
        *("step", "observation", "action", "reward", "discount", "is_first", "is_last"),
        *("is_terminal", "q_values", "policy", "source_episode_id", "reward_rule"),
        *("feedback_ids", "decision_id", "turn_id"),
    ),
    "decisions": (
        *_IDS,
        *("decision_id", "turn_id", "actor_id", "actor_type", "ts", "context_hash", "context"),
        *("ambient_state", "coordination_state", "prompt", "action", "response", "confidence"),
        *("reasoning", "candidates", "suggested_action", "suggestion_followed"),
        *("outcome_reward", "outcome_was_good", "reward_rule", "feedback_ids"),
    ),
    "stepwise": (
        *_IDS,
        *("prompt", "completions", "labels", "rewards", "actor_id", "turn_ids", "decision_ids"),
        *("reward_rule", "feedback_ids", "source_episode_id", "label_rule"),
    ),
    "surveys": (
        *("participant_id", "confirmation_number", "session_id", "section", "question"),
        *("answer_text", "answer_num", "answered_at", "split", "group_id"),
    ),
}

# The OpenAI fine-tuning files (`<config>/<split>.jsonl`, release/store/openai_files.py): what each
# is for and what each of its fields means, for the card and the data dictionary (a line is JSON,
# so a field is named by its path).
EXPORT_PURPOSE = {
    "openai_sft": "Every `sft` row as an example of OpenAI's chat fine-tuning format (supervised "
    "fine-tuning: upload a split's file as the `training_file` / `validation_file` of a "
    "fine-tuning job). Only the row's final assistant message is trained (`weight` 1); the earlier "
    "ones are context (`weight` 0), as they are other rows' targets.",
    "openai_preference": "Every `preference` row as an example of OpenAI's preference fine-tuning "
    "format (direct preference optimization, `method: dpo`).",
}
_ROLE = "`system`, `user` or `assistant`."
_TEXT = "The message text (never empty)."
EXPORT_FIELDS: dict[str, dict[str, str]] = {
    "openai_sft": {
        "messages": "The conversation of the `sft` row (its `messages`), ending with the trained "
        "assistant message.",
        "messages[].role": _ROLE,
        "messages[].content": _TEXT,
        "messages[].weight": "Assistant messages only: 1 on the last (trained), 0 on the earlier "
        "ones (context).",
    },
    "openai_preference": {
        "input.messages": "The `preference` row's `prompt`, ending with a user message.",
        "input.messages[].role": _ROLE,
        "input.messages[].content": _TEXT,
        "preferred_output": "The row's `chosen` answer: exactly one assistant message "
        "`{role, content}`.",
        "non_preferred_output": "The row's `rejected` answer: exactly one assistant message "
        "`{role, content}`.",
    },
}

# The Minari datasets (`minari/turnlake/<view>/<split>-v0`, exports/minari.py): what each field of
# a Minari episode holds, for the card and the data dictionary.
MINARI_FIELDS: dict[str, str] = {
    "observations": 'The rows\' `observation` in step order, then `""` (the observation after the '
    "last action: not logged); n + 1 entries.",
    "actions": "The rows' `action`; n entries.",
    "rewards": "The rows' `reward`.",
    "terminations": "The rows' `is_terminal`.",
    "truncations": "`is_last` without `is_terminal` (an episode that ended without its outcome).",
    "metadata episode_id": "The rows' `episode_id`, in the episode's metadata: "
    "`dataset.storage.get_episode_metadata([episode.id])`; step i is the row of `step` i.",
}
