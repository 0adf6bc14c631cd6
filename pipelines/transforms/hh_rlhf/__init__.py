"""`hh_rlhf` bronze → silver: one episode per preference pair, its turns a small tree (Polars).

A pair is the prompt both transcripts share followed by two branches: the chosen answer and the
rejected answer, each replying to the prompt's last turn (`parent_turn_id`). turn_index: the
prompt's turns, then the chosen answer's, then the rejected answer's. `turns.attributes.branch`
says which (prompt, chosen, rejected). Feedback: `preferred` on each answer's last turn, 1 for the
chosen and 0 for the rejected one (scale `bool`, a human's relative judgement: no reward rule
turns it into an absolute reward, see docs/rewards.md).

The same pair (same two transcripts) in one dataset twice is one episode (the later copy).
Split unit: the prompt (`hh_rlhf:prompt/<hash>`), so pairs that answer one conversation never
straddle splits.
"""

from __future__ import annotations

import polars as pl

from pipelines.config.settings import Settings
from pipelines.schemas import bronze_table, conform, silver_schema
from pipelines.transforms.polars_engine import TRANSFORM_ENGINE

SOURCE = "hh_rlhf"
PAIRS = "hh_rlhf_pairs"
ROLE_MAP = {"Human": "user", "Assistant": "assistant"}
BRANCHES = ("prompt", "chosen", "rejected")


def to_silver(bronze: dict[str, pl.LazyFrame], settings: Settings) -> dict[str, pl.LazyFrame]:
    pairs = bronze_table(bronze, PAIRS)
    kept = latest_copies(pairs).collect(engine=TRANSFORM_ENGINE)
    turns = pair_turns(kept)
    return {
        "episodes": conform(episodes(kept), silver_schema("episodes")).sort("episode_id"),
        "turns": conform(turns.drop("branch", "is_last"), silver_schema("turns")).sort(
            "episode_id", "turn_index"
        ),
        "feedback": conform(preferred(turns), silver_schema("feedback")).sort("feedback_id"),
    }


def latest_copies(pairs: pl.LazyFrame) -> pl.LazyFrame:
    native = pl.concat_str("dataset", pl.lit("/"), "pair_id")
    return (
        pairs.sort("file", "line")
        .unique(["dataset", "pair_id"], keep="last", maintain_order=True)
        .with_columns(native_id=native, episode_id=pl.lit(f"{SOURCE}:") + native)
    )


def episodes(kept: pl.DataFrame) -> pl.DataFrame:
    attributes = pl.struct("dataset", "pair_id", "notes").struct.json_encode()
    embedded = pl.concat_str(
        attributes.str.strip_suffix("}"), pl.lit(',"extra":'), "extra", pl.lit("}")
    )
    return kept.select(
        "episode_id",
        "native_id",
        source=pl.lit(SOURCE),
        group_id=pl.lit(f"{SOURCE}:prompt/") + pl.col("prompt_id"),
        started_at=pl.lit(None, pl.Datetime("us", "UTC")),
        ended_at=pl.lit(None, pl.Datetime("us", "UTC")),
        n_turns=pl.lit(0, pl.Int64),
        end_reason=pl.lit(None, pl.String),
        attributes=pl.when(pl.col("extra").is_null()).then(attributes).otherwise(embedded),
        source_file="file",
    )


def pair_turns(kept: pl.DataFrame) -> pl.DataFrame:
    """Prompt, chosen and rejected turns in one numbering; each answer hangs off the prompt."""
    branches = [
        kept.select("episode_id", turn=pl.col(b), n_prompt=pl.col("prompt").list.len())
        .with_columns(branch=pl.lit(b), order=pl.lit(i))
        .explode("turn")
        .with_columns(branch_pos=pl.int_range(pl.len()).over("episode_id"))
        for i, b in enumerate(BRANCHES)
    ]
    rows = pl.concat(branches).sort("episode_id", "order", "branch_pos")
    rows = rows.with_columns(turn_index=pl.int_range(pl.len()).over("episode_id").cast(pl.Int64))
    parent_index = (
        pl.when((pl.col("branch") != "prompt") & (pl.col("branch_pos") == 0))
        .then(pl.col("n_prompt") - 1)
        .when(pl.col("turn_index") > 0)
        .then(pl.col("turn_index") - 1)
    )
    turn_id = pl.format("{}#{}", pl.col("episode_id"), pl.col("turn_index"))
    return rows.unnest("turn").select(
        turn_id=turn_id,
        episode_id="episode_id",
        turn_index="turn_index",
        role=pl.col("role").replace_strict(ROLE_MAP, return_dtype=pl.String),
        native_role="role",
        actor_id=pl.lit(None, pl.String),
        text="text",
        ts=pl.lit(None, pl.Datetime("us", "UTC")),
        internal=pl.lit(False),
        attributes=pl.struct("branch").struct.json_encode(),
        parent_turn_id=pl.format("{}#{}", pl.col("episode_id"), parent_index),
        # kept for `preferred`, dropped by the contract
        branch="branch",
        is_last=pl.col("branch_pos") == pl.col("branch_pos").max().over("episode_id", "branch"),
    )


def preferred(turns: pl.DataFrame) -> pl.DataFrame:
    """`preferred` = 1 on the chosen answer's last turn, 0 on the rejected answer's."""
    answers = turns.filter(pl.col("is_last") & (pl.col("branch") != "prompt"))
    return answers.select(
        feedback_id=pl.format("{}:{}", pl.col("episode_id"), pl.col("branch")),
        episode_id="episode_id",
        turn_id="turn_id",
        target=pl.lit("turn"),
        name=pl.lit("preferred"),
        value_num=(pl.col("branch") == "chosen").cast(pl.Float64),
        value_text="branch",
        scale=pl.lit("bool"),
        source_kind=pl.lit("human"),
        observed_at=pl.lit(None, pl.Datetime("us", "UTC")),
        attributes=pl.lit(None, pl.String),
    )
