"""`oasst` bronze → silver: one episode per message tree, its messages as turns that keep their
parent (`parent_turn_id`), and feedback from emojis, labels and sibling ranks (pure Polars).

Rules:
- The same tree in two places: identical copies are one tree; different copies → the later file
  (then line) wins, the others are `duplicate_conflict`.
- Deleted, unreviewed (review_result not true) and synthetic messages do not become turns unless
  `[oasst] include_deleted / include_unreviewed / include_synthetic` (OASST's own exporter leaves
  them out too), and neither do their replies (a reply to a message nobody sees has no context).
  The tree's episode is kept even when nothing of it is: its `attributes.excluded` counts the
  messages left out by reason (deleted, unreviewed, synthetic, below_excluded), so every message
  of bronze is a turn or a count.
- turn_index = position in depth-first pre-order among the kept messages (a tree is not linear:
  the order follows the file; `parent_turn_id` gives the structure). role: prompter → user.
- Split unit: the tree.
"""

from __future__ import annotations

import polars as pl

from pipelines.config.settings import Settings
from pipelines.schemas import bronze_table, conform, silver_schema
from pipelines.transforms.oasst import messages as msg
from pipelines.transforms.polars_engine import TRANSFORM_ENGINE

TREES = "oasst_trees"


def to_silver(bronze: dict[str, pl.LazyFrame], settings: Settings) -> dict[str, pl.LazyFrame]:
    trees = bronze_table(bronze, TREES)
    kept, conflicts = msg.dedup_trees(trees)
    messages = msg.with_exclusion(msg.explode(kept), settings.oasst).collect(
        engine=TRANSFORM_ENGINE
    )
    turns = msg.turns(messages)
    return {
        "episodes": _conformed(msg.episodes(kept, messages), "episodes").sort("episode_id"),
        "turns": _conformed(turns, "turns").sort("episode_id", "turn_index"),
        "feedback": _conformed(msg.feedback(messages), "feedback").sort("feedback_id"),
        "quarantine": _conformed(conflicts, "quarantine").sort("file", "locator"),
    }


def _conformed(frame: pl.LazyFrame | pl.DataFrame, table: str) -> pl.LazyFrame:
    return conform(frame, silver_schema(table))
