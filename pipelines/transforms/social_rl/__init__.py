"""social_rl bronze → silver: episodes (one per run round), turns, agent_rounds, feedback.

Cross-file logic lives here: a run's meta (inline `meta` block or sibling meta.json) and its
PRAR state are joined per run folder; duplicate rounds are quarantined at stage "silver".
"""

from __future__ import annotations

import polars as pl

from pipelines.config.settings import Settings
from pipelines.schemas import conform, empty, polars_schema, silver_schema
from pipelines.schemas.bronze.social_rl import BRONZE_MODELS
from pipelines.sources.base import stable_hash

SOURCE = "social_rl"
PRE_VERSIONED = "pre-0.2.0"  # runs written before social_rl_version existed
DECIMALS = 12  # float noise like 0.19999999999999998 is rounded away
SCORES = ("engagement", "theoretical_alignment", "contribution_value")
META_COLUMNS = (
    "experiment_id",
    "social_rl_version",
    "model",
    "framework",
    "framework_option",
    "prar_run_id",
    "prar_state_file",
)
INLINE_META = pl.Struct({name: pl.String for name in META_COLUMNS})


def to_silver(bronze: dict[str, pl.LazyFrame], settings: Settings) -> dict[str, pl.LazyFrame]:
    rounds = _with_episode_ids(_table(bronze, "social_rl_rounds"))
    kept = rounds.filter(_first_copy())
    runs = _run_context(
        kept,
        _table(bronze, "social_rl_meta"),
        _table(bronze, "social_rl_prar_states"),
        _table(bronze, "social_rl_metrics"),
    )
    roles = _agent_roles(kept)
    turns = _turns(kept, roles)
    agent_rounds = _agent_rounds(kept, roles)
    episodes = _episodes(kept, runs)
    return {
        "episodes": conform(episodes.sort("episode_id"), silver_schema("episodes")),
        "turns": conform(turns.sort("episode_id", "turn_index"), silver_schema("turns")),
        "agent_rounds": conform(
            agent_rounds.drop("ended_at").sort("episode_id", "agent_id"),
            silver_schema("agent_rounds"),
        ),
        "feedback": conform(
            _feedback(agent_rounds).sort("episode_id", "agent_id", "name"),
            silver_schema("feedback"),
        ),
        "quarantine": conform(_duplicates(rounds), silver_schema("quarantine")),
    }


def _table(bronze: dict[str, pl.LazyFrame], name: str) -> pl.LazyFrame:
    frame = bronze.get(name)
    return frame if frame is not None else empty(polars_schema(BRONZE_MODELS[name])).lazy()


def _json_object(**columns: pl.Expr) -> pl.Expr:
    return pl.struct(**columns).struct.json_encode()


def _with_episode_ids(rounds: pl.LazyFrame) -> pl.LazyFrame:
    native = pl.concat_str(
        pl.col("run_dir"), pl.lit("/round"), pl.col("round_number").cast(pl.String)
    )
    return rounds.with_columns(native_id=native, episode_id=pl.lit(f"{SOURCE}:") + native)


def _first_copy() -> pl.Expr:
    # The same run round in two files (round1 / round01): keep the first by path, flag the rest.
    return pl.col("file").rank("ordinal").over("episode_id") == 1


def _duplicates(rounds: pl.LazyFrame) -> pl.LazyFrame:
    first_file = pl.col("file").min().over("episode_id")
    return rounds.filter(~_first_copy()).select(
        source=pl.lit(SOURCE),
        file="file",
        locator="locator",
        error_kind=pl.lit("duplicate_conflict"),
        message=pl.format(
            "round {} of run {} is also in {}; kept that copy",
            "round_number",
            "run_dir",
            first_file,
        ),
        raw=pl.lit(None, pl.String),
        stage=pl.lit("silver"),
    )


# ---------------------------------------------------------------- run context (meta, PRAR, metrics)


def _run_context(
    rounds: pl.LazyFrame, meta: pl.LazyFrame, states: pl.LazyFrame, metrics: pl.LazyFrame
) -> pl.LazyFrame:
    """One row per run folder: meta fields (inline block first, then meta.json), PRAR link, metrics file."""
    inline = (
        rounds.filter(pl.col("meta").is_not_null())
        .sort("run_dir", "round_number")
        .select("run_dir", pl.col("meta").str.json_decode(INLINE_META).struct.unnest())
        .group_by("run_dir")
        .agg(pl.col(name).drop_nulls().first().alias(f"inline_{name}") for name in META_COLUMNS)
    )
    sibling = meta.select("run_dir", *META_COLUMNS, meta_extra="extra", meta_file="file").unique(
        "run_dir", keep="first", maintain_order=True
    )
    runs = (
        rounds.select("run_dir")
        .unique()
        .join(inline, on="run_dir", how="left")
        .join(sibling, on="run_dir", how="left")
        .with_columns(pl.coalesce(f"inline_{name}", name).alias(name) for name in META_COLUMNS)
        .with_columns(
            meta_source=pl.when(pl.col("inline_experiment_id").is_not_null())
            .then(pl.lit("inline"))
            .when(pl.col("meta_file").is_not_null())
            .then(pl.lit("meta.json")),
            prar_run=pl.coalesce(
                "prar_run_id", pl.col("prar_state_file").str.extract(r"([^/\\]+)[/\\]state\.json$")
            ),
        )
    )
    prar = states.select(
        prar_run="run_name", prar_file="file", prar_current_step="current_step"
    ).unique("prar_run", keep="first", maintain_order=True)
    metric_files = metrics.select("run_dir", metrics_file="file").unique(
        "run_dir", keep="first", maintain_order=True
    )
    return runs.join(prar, on="prar_run", how="left").join(metric_files, on="run_dir", how="left")


# ---------------------------------------------------------------- episodes


def _episodes(rounds: pl.LazyFrame, runs: pl.LazyFrame) -> pl.LazyFrame:
    ts = pl.col("messages").list.eval(pl.element().struct.field("ts"))
    version = pl.coalesce("social_rl_version", pl.lit(PRE_VERSIONED))
    return rounds.join(runs, on="run_dir", how="left").select(
        "episode_id",
        source=pl.lit(SOURCE),
        native_id="native_id",
        group_id=pl.when(pl.col("experiment_id").is_not_null())
        .then(pl.lit("experiment:") + pl.col("experiment_id"))
        .otherwise(pl.lit("run:") + pl.col("run_dir")),
        started_at=ts.list.min(),
        ended_at=ts.list.max(),
        n_turns=pl.col("messages").list.len().cast(pl.Int64),
        end_reason=pl.lit(None, pl.String),
        attributes=_json_object(
            run_dir=pl.col("run_dir"),
            round_number=pl.col("round_number"),
            experiment_id=pl.col("experiment_id"),
            social_rl_version=version,
            model=pl.col("model"),
            framework=pl.col("framework"),
            framework_option=pl.col("framework_option"),
            meta_source=pl.col("meta_source"),
            synthesis=pl.col("synthesis"),
            duration_seconds=pl.col("duration_seconds"),
            prar_run=pl.col("prar_run"),
            prar_state_file=pl.coalesce("prar_file", "prar_state_file"),
            prar_current_step=pl.col("prar_current_step"),
            metrics_file=pl.col("metrics_file"),
            round_config=pl.col("round_config"),
            meta_extra=pl.col("meta_extra"),
            extra=pl.col("extra"),
        ),
        source_file="file",
    )


# ---------------------------------------------------------------- turns


def _role_prefix(agent_id: pl.Expr) -> pl.Expr:
    """`Worker+Alice` → `Worker`; ids without the Role+Name form have no prefix."""
    return pl.when(agent_id.str.contains("+", literal=True)).then(
        agent_id.str.split("+").list.first()
    )


def _adaptations(rounds: pl.LazyFrame) -> pl.LazyFrame:
    return (
        rounds.filter(pl.col("policy_adaptations").list.len() > 0)
        .select("episode_id", "run_dir", "policy_adaptations")
        .explode("policy_adaptations")
        .unnest("policy_adaptations")
    )


def _agent_roles(rounds: pl.LazyFrame) -> pl.LazyFrame:
    """Role of each agent of a run as the source's adaptations state it (for ids without a prefix)."""
    return (
        _adaptations(rounds)
        .filter(pl.col("agent_id").is_not_null() & pl.col("role").is_not_null())
        .group_by("run_dir", "agent_id")
        .agg(adapted_role=pl.col("role").sort().first())
    )


def _turns(rounds: pl.LazyFrame, roles: pl.LazyFrame) -> pl.LazyFrame:
    exploded = (
        rounds.filter(pl.col("messages").list.len() > 0)
        .select(
            "episode_id",
            "run_dir",
            "messages",
            turn_index=pl.int_ranges(0, pl.col("messages").list.len(), dtype=pl.Int64),
        )
        .explode("messages", "turn_index")
        .unnest("messages")
        .join(roles, on=["run_dir", "agent_id"], how="left")
    )
    return exploded.select(
        turn_id=pl.format("{}#{}", "episode_id", "turn_index"),
        episode_id="episode_id",
        turn_index="turn_index",
        role=pl.lit("agent"),
        native_role=pl.coalesce(_role_prefix(pl.col("agent_id")), "adapted_role"),
        actor_id="agent_id",
        text="content",
        ts="ts",
        internal=pl.col("internal").fill_null(False),
        attributes=_json_object(
            turn_number=pl.col("turn_number"),
            round_number=pl.col("round_number"),
            prar_cue_used=pl.col("prar_cue_used"),
            message_role=pl.col("message_role"),
            context_frame=pl.col("context_frame"),
            validation=pl.col("validation"),
            extra=pl.col("extra"),
        ),
    )


# ---------------------------------------------------------------- agent rounds and feedback


def _agent_rounds(rounds: pl.LazyFrame, roles: pl.LazyFrame) -> pl.LazyFrame:
    ended = rounds.select(
        "episode_id",
        ended_at=pl.col("messages").list.eval(pl.element().struct.field("ts")).list.max(),
    )
    vectors = _vector_columns(rounds)
    deltas = (
        _adaptations(rounds)
        .filter(pl.col("agent_id").is_not_null())
        .group_by("episode_id", "agent_id", maintain_order=True)
        .agg(
            pl.col("role").drop_nulls().first(),
            *(
                pl.col(f"{d}_delta").drop_nulls().first().alias(f"reported_{d}_delta")
                for d in ("engagement", "alignment", "contribution")
            ),
            adaptations=pl.struct(pl.all().exclude("episode_id", "run_dir", "agent_id")),
        )
    )
    episode_keys = rounds.select("episode_id", "run_dir", "round_number")
    joined = (
        vectors.join(deltas, on=["episode_id", "agent_id"], how="full", coalesce=True)
        .join(episode_keys, on="episode_id", how="left")
        .join(roles, on=["run_dir", "agent_id"], how="left")
        .join(ended, on="episode_id", how="left")
    )
    rounded = [
        pl.col(c).round(DECIMALS)
        for c in (
            *SCORES,
            "synthesis_inclusion",
            "reported_engagement_delta",
            "reported_alignment_delta",
            "reported_contribution_delta",
        )
    ]
    return joined.select(
        "episode_id",
        "agent_id",
        "round_number",
        pl.coalesce(_role_prefix(pl.col("agent_id")), "role", "adapted_role").alias("role"),
        *rounded,
        "direct_references",
        "response_received",
        "analyst_mentions",
        "concepts_embodied",
        "ended_at",
        attributes=_json_object(
            vector_round_number=pl.col("vector_round_number"),
            extra=pl.col("vector_extra"),
            adaptations=pl.col("adaptations"),
        ),
    )


def _vector_columns(rounds: pl.LazyFrame) -> pl.LazyFrame:
    return (
        rounds.filter(pl.col("feedback").list.len() > 0)
        .select("episode_id", "feedback")
        .explode("feedback")
        .unnest("feedback")
        .rename({"round_number": "vector_round_number", "extra": "vector_extra"})
    )


def _feedback(agent_rounds: pl.LazyFrame) -> pl.LazyFrame:
    signals = (
        agent_rounds.select("episode_id", "agent_id", "round_number", "ended_at", *SCORES)
        .unpivot(
            index=["episode_id", "agent_id", "round_number", "ended_at"],
            on=list(SCORES),
            variable_name="name",
            value_name="value_num",
        )
        .filter(pl.col("value_num").is_not_null())
    )
    feedback_id = pl.struct("episode_id", "agent_id", "name", "value_num").map_elements(
        lambda s: stable_hash(
            s["episode_id"], "agent_round", s["agent_id"], s["name"], s["value_num"]
        ),
        return_dtype=pl.String,
    )
    return signals.select(
        feedback_id=feedback_id,
        episode_id="episode_id",
        agent_id="agent_id",
        target=pl.lit("agent_round"),
        name="name",
        value_num="value_num",
        scale=pl.lit("[0,1]"),
        source_kind=pl.lit("system"),
        observed_at="ended_at",
        attributes=_json_object(round_number=pl.col("round_number")),
    )
