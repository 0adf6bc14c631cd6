"""social_rl bronze → silver: episodes (one per run round), turns, agent_rounds, feedback,
decisions (policy adaptations), contexts (their trigger), policy_states.

One module per concern: runs (episodes, run context, duplicate rounds), turns, agent_rounds
(feedback vectors and signals), adaptations (decisions), policy_states; common holds what they
share.
"""

from __future__ import annotations

import polars as pl

from pipelines.config.settings import Settings
from pipelines.schemas import bronze_table, conform, silver_schema
from pipelines.schemas.bronze.social_rl import BRONZE_MODELS
from pipelines.transforms.polars_engine import TRANSFORM_ENGINE
from pipelines.transforms.social_rl import adaptations, agent_rounds, runs
from pipelines.transforms.social_rl.common import agent_roles
from pipelines.transforms.social_rl.policy_states import policy_states
from pipelines.transforms.social_rl.turns import turns


def to_silver(
    bronze: dict[str, pl.LazyFrame],
    settings: Settings,
    prar_runs: pl.LazyFrame | pl.DataFrame | None = None,
) -> dict[str, pl.LazyFrame]:
    """Silver of these bronze rows. `prar_runs` (`units.unit_evidence`): the PRAR states of the
    whole corpus when this bronze is only part of it."""
    bronze = {name: bronze_table(bronze, name) for name in BRONZE_MODELS}
    rounds = runs.with_episode_ids(bronze["social_rl_rounds"])
    # The frames several tables read are collected once: a lazy frame read by several collected
    # plans is computed again in each (a `collect_all` of the tables shares none of it either).
    kept = rounds.filter(runs.first_copy()).collect(engine=TRANSFORM_ENGINE).lazy()
    prar = prar_runs.lazy() if prar_runs is not None else None
    context, roles = (
        frame.lazy()
        for frame in pl.collect_all(
            [runs.run_context(kept, bronze, prar), agent_roles(kept)], engine=TRANSFORM_ENGINE
        )
    )
    vectors = agent_rounds.agent_rounds(kept, roles).collect(engine=TRANSFORM_ENGINE).lazy()
    adapted = adaptations.build(kept, vectors, agent_rounds.feedback(vectors))
    out = {
        "episodes": runs.episodes(kept, context).sort("episode_id"),
        "turns": turns(kept, roles).sort("episode_id", "turn_index"),
        "agent_rounds": vectors.drop("ended_at").sort("episode_id", "agent_id"),
        "feedback": adapted["feedback"].sort("episode_id", "agent_id", "name"),
        "decisions": adapted["decisions"].sort("decision_id"),
        "contexts": adapted["contexts"].sort("context_hash"),
        "policy_states": policy_states(bronze["social_rl_policy_states"], context).sort(
            "policy_state_id"
        ),
        "quarantine": runs.duplicates(rounds),
    }
    return {name: conform(frame, silver_schema(name)) for name, frame in out.items()}
