"""Row ids of the released datasets: the release orders rows by them (assemble.py) and the
release diff matches rows across releases by them (card/diff.py)."""

# The columns that name a row of each dataset (those present are used; none present: every flat
# column). rl_steps is ordered by episode, then step: an episode's steps stay together and in order.
ROW_ID: dict[str, tuple[str, ...]] = {
    "sft": ("turn_id",),
    "kto": ("turn_id", "decision_id"),
    "preference": (
        "pair_kind",
        "chosen_turn_id",
        "rejected_turn_id",
        "decision_id",
        "chosen_decision_id",
        "rejected_decision_id",
    ),
    "rl_steps": ("episode_id",),
    "decisions": ("decision_id",),
    "stepwise": ("episode_id",),
    "surveys": ("participant_id", "session_id", "section", "question"),
}
