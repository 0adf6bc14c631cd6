"""policy_state.json → silver `policy_states`: one row per run × role × cue, both shapes.

The policy state is what a run's policies looked like when it was saved (the runner writes it at
the end), so it is never an observation of an earlier round. `policy_state_id` is
`social_rl:<run_dir>/policy_state#<role>/<cue index>` (`-` for a role without cues).
"""

from __future__ import annotations

import polars as pl

from pipelines.transforms.social_rl.common import SOURCE, json_object
from pipelines.transforms.social_rl.runs import group_id


def policy_states(states: pl.LazyFrame, runs: pl.LazyFrame) -> pl.LazyFrame:
    """`runs`: run_dir → experiment_id (a folder without rounds still has its policy state)."""
    cues = (
        states.filter(pl.col("cues").list.len() > 0)
        .rename({"extra": "doc_extra"})
        .explode("cues")
        .unnest("cues")
        .join(runs.select("run_dir", "experiment_id"), on="run_dir", how="left")
    )
    index = pl.col("cue_index").cast(pl.String).fill_null("-")
    return cues.select(
        policy_state_id=pl.format(
            f"{SOURCE}:{{}}/policy_state#{{}}/{{}}", "run_dir", "role", index
        ),
        run_dir="run_dir",
        group_id=group_id(),
        role="role",
        policy_name="policy_name",
        cue_index="cue_index",
        cue_id="cue_id",
        mode="mode",
        text="text",
        active="active",
        intensity="intensity",
        grounding="grounding",
        last_triggered="last_triggered",
        thresholds="thresholds",
        feedback_snapshot="feedback_snapshot",
        shape="shape",
        framework_option="framework_option",
        source_run_id="source_run_id",
        social_rl_version="social_rl_version",
        written_at="written_at",
        source_file="file",
        attributes=json_object(
            framework_name=pl.col("framework_name"),
            extra=pl.col("extra"),
            document_extra=pl.col("doc_extra"),
        ),
    )
