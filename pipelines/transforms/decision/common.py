"""Shared by the decision silver builders: the source name and its bronze table."""

SOURCE = "decision"
TABLE = "decision_records"
RATINGS_TABLE = "decision_rating_events"
REPLAYS_TABLE = "decision_replay_results"
