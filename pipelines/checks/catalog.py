"""The blocking checks of the project, as plain data (no Dagster): every table's Pandera contract
at data depth, plus the nothing-lost reconciliation, silver referential integrity, reward
provenance, leak-free splits, and the release's own verification and trainability (the verdicts are
in pipelines/checks/verdicts.py; pipelines/checks/factory.py turns them into Dagster steps).

Every check judges on every run; only a contract skips the partitions (and bronze parts) it
passed before with the same digest and engine (pipelines/checks/partitioned.py).
"""

from collections.abc import Callable
from dataclasses import dataclass

import pandera.polars as pa

from pipelines.checks import verdicts
from pipelines.checks.verdicts import Verdict
from pipelines.config.settings import Settings
from pipelines.storage.engine import engine_digest
from pipelines.storage.layout import Layout


@dataclass(frozen=True)
class BlockingCheck:
    """A blocking check: where it is attached and how it judges."""

    step: str  # the group of checks one asset step runs (factory.py)
    asset: str
    name: str
    description: str
    judge: Callable[[Settings], Verdict]
    additional_deps: tuple[str, ...] = ()


def _layout(settings: Settings) -> Layout:
    return Layout(settings.data_root)


def _contract(
    step: str, asset: str, table: str, model: type[pa.DataFrameModel], layer: str, source: str = ""
) -> BlockingCheck:
    """A table's contract: a stored table of `layer` checked a partition (or slice of rows) at a
    time, or (`source` given) a bronze table's current parts checked a group of files at a time
    (pipelines/checks/partitioned.py)."""
    from pipelines.checks.partitioned import validate_parts, validate_table

    if source:
        judge = lambda s: validate_parts(model, _layout(s), source, table, engine_digest())
    else:
        judge = lambda s: validate_table(model, _layout(s), layer, table, engine_digest())
    description = f"`{table}` satisfies `{model.__name__}` (schema and data)."
    return BlockingCheck(step, asset, f"{table}_matches_contract", description, judge=judge)


# ---------------------------------------------------------------- the checks, per step


def _bronze_checks(source: str) -> list[BlockingCheck]:
    from pipelines.schemas.bronze import bronze_models

    def contract(table: str, model: type[pa.DataFrameModel]) -> BlockingCheck:
        step = f"bronze_{source}"
        return _contract(step, step, table, model, "bronze", source)

    checks = [contract(table, model) for table, model in bronze_models(source).items()]
    checks.append(
        BlockingCheck(
            f"bronze_{source}",
            f"bronze_{source}",
            "nothing_lost",
            "Per raw file: records read == bronze rows + quarantine rows.",
            judge=lambda s: verdicts.nothing_lost(source, s),
        )
    )
    return checks


def _silver_checks() -> list[BlockingCheck]:
    from pipelines.schemas.silver import SILVER_MODELS

    def contract(table: str, model: type[pa.DataFrameModel]) -> BlockingCheck:
        return _contract("silver", f"silver_{table}", table, model, "silver")

    checks = [contract(table, model) for table, model in SILVER_MODELS.items()]
    checks.append(
        BlockingCheck(
            "silver",
            "silver_episodes",
            "references_resolve",
            "Every id a silver row points at (episode, turn, decision, context) exists.",
            judge=verdicts.references_resolve,
            additional_deps=tuple(f"silver_{t}" for t in SILVER_MODELS if t != "episodes"),
        )
    )
    return checks


def _gold_checks() -> list[BlockingCheck]:
    from pipelines.schemas.gold import GOLD_MODELS

    def contract(table: str, model: type[pa.DataFrameModel]) -> BlockingCheck:
        step = "splits" if table == "splits" else "gold"
        return _contract(step, f"gold_{table}", table, model, "gold")

    checks = [contract(table, model) for table, model in GOLD_MODELS.items()]
    checks.append(
        BlockingCheck(
            "gold",
            "gold_turn_rewards",
            "rewards_traceable",
            "Every reward is in [-1, 1], names a registered rule, and lists ≥1 feedback row that "
            "exists.",
            judge=verdicts.rewards_traceable,
            additional_deps=("silver_feedback",),
        )
    )
    checks.append(
        BlockingCheck(
            "splits",
            "gold_splits",
            "splits_leak_free",
            "Every group has exactly one split and no group or human participant is in two splits "
            "(prompts are proven at release time, over the datasets).",
            judge=verdicts.splits_leak_free,
            additional_deps=tuple(f"silver_{t}" for t in verdicts.SPLIT_SILVER),
        )
    )
    return checks


def _release_checks() -> list[BlockingCheck]:
    return [
        BlockingCheck(
            "release",
            "release",
            "release_verifies",
            "Every file of the latest release matches its manifest (sha256, rows); the split proof "
            "holds.",
            judge=verdicts.release_verifies,
        ),
        BlockingCheck(
            "release",
            "release",
            "release_is_trainable",
            "The latest release's own files keep what a trainer relies on (DESIGN §5): whole RLDS "
            "episodes, "
            "one chat shape, preference pairs on one prompt never preferring the lower reward, KTO "
            "label = "
            "sign of the reward, no reward contradicting its outcome.",
            judge=verdicts.release_is_trainable,
        ),
    ]


def blocking_checks() -> list[BlockingCheck]:
    """Every blocking check of the project, made in one place."""
    from pipelines.config.names import SOURCES

    checks = [check for source in SOURCES for check in _bronze_checks(source)]
    return [*checks, *_silver_checks(), *_gold_checks(), *_release_checks()]
