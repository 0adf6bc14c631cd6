"""The blocking checks of the project, as plain data (no Dagster): every table's Pandera contract
at data depth, plus the nothing-lost reconciliation, silver referential integrity, reward
provenance, leak-free splits, and the release's own verification and trainability (the verdicts are
in pipelines/checks/verdicts.py; pipelines/checks/factory.py turns them into Dagster steps).

Each check names exactly what it reads (`inputs`); with the engine digest (storage/engine.py) that
is its key, so the validation ledger (pipelines/checks/ledger.py) can answer a check whose inputs
and engine are those it last passed on without reading the data.
"""

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import pandera.polars as pa

from pipelines.checks import verdicts
from pipelines.checks.ledger import (
    Verdict,
    inputs_digest,
    stat_lines,
)
from pipelines.config.settings import Settings
from pipelines.storage import tables as stored
from pipelines.storage.engine import engine_digest
from pipelines.storage.layout import Layout
from pipelines.storage.uri import as_root


@dataclass(frozen=True)
class BlockingCheck:
    """A blocking check: where it is attached, how it judges, and exactly what it reads."""

    step: str  # the grouped Dagster step it runs in
    asset: str
    name: str
    description: str
    judge: Callable[[Settings], Verdict]
    inputs: Callable[[Settings], list[str]]  # fingerprint lines of everything `judge` reads
    additional_deps: tuple[str, ...] = ()

    @property
    def check_id(self) -> str:
        return f"{self.asset}:{self.name}"

    def digest(self, settings: Settings) -> str:
        return inputs_digest(self.inputs(settings), engine_digest())


def _layout(settings: Settings) -> Layout:
    return Layout(settings.data_root)


def _contract(
    step: str,
    asset: str,
    table: str,
    model: type[pa.DataFrameModel],
    load: Callable[[Settings], list[Path]] | str,
    inputs: Callable[[Settings], list[str]],
) -> BlockingCheck:
    """`load`: the layer of a stored table, checked a partition (or slice of rows) at a time, or
    the current part files of a bronze table, checked a group of files at a time
    (pipelines/checks/partitioned.py)."""
    from pipelines.checks.partitioned import validate_files, validate_table
    from pipelines.schemas import polars_schema

    name = f"{table}_matches_contract"
    check_id, layer = f"{asset}:{name}", load
    if isinstance(layer, str):
        judge = lambda s: validate_table(model, _layout(s), layer, table, check_id, engine_digest())
    else:
        judge = lambda s: validate_files(
            model, _layout(s), layer(s), polars_schema(model), check_id, engine_digest()
        )
    description = f"`{table}` satisfies `{model.__name__}` (schema and data)."
    return BlockingCheck(step, asset, name, description, judge=judge, inputs=inputs)


# ---------------------------------------------------------------- what each check reads


def _part_lines(settings: Settings, source: str, tables: list[str]) -> list[str]:
    from pipelines.ingest.log import current_parts

    parts = [p for table in tables for p in current_parts(_layout(settings), source, table)]
    return stat_lines(parts, settings.data_root)


def _reconcile_lines(settings: Settings, source: str) -> list[str]:
    from pipelines.ingest.batches import QUARANTINE_PART
    from pipelines.ingest.log import read_log
    from pipelines.schemas.bronze import bronze_models

    log = read_log(_layout(settings), source)
    log_digest = hashlib.sha256(log.write_json().encode()).hexdigest()
    return [
        f"log|{log_digest}",
        *_part_lines(settings, source, [*bronze_models(source), QUARANTINE_PART]),
    ]


def _silver_lines(settings: Settings, tables: Iterable[str]) -> list[str]:
    # silver is republished (new, uniquely named Delta files) only when its inputs change
    layout, lines = _layout(settings), []
    for table in tables:
        if not stored.exists(layout, "silver", table):
            lines.append(f"silver.{table}|missing")
            continue
        files = [as_root(f) for f in stored.files(layout, "silver", table)]
        lines += stat_lines(files, settings.data_root)
    return lines


def _gold_lines(settings: Settings, tables: Iterable[str]) -> list[str]:
    # republished whenever silver changed, often with a table's bytes unchanged: their (small)
    # files are hashed, so such a table keeps its verdict
    return [f"{t}|{stored.content_digest(_layout(settings), 'gold', t)}" for t in tables]


def _release_lines(settings: Settings) -> list[str]:
    from pipelines.release.store.files import latest_release

    exports = _layout(settings).exports
    version = latest_release(exports)
    if version is None:  # passes only when there is nothing to release: silver decides
        return [
            "no complete release",
            *_silver_lines(settings, ["episodes"]),
        ]
    files = sorted(p for p in (exports / version).rglob("*") if p.is_file())
    return [version, *stat_lines(files, settings.data_root)]


# ---------------------------------------------------------------- the checks, per step


def _bronze_checks(source: str) -> list[BlockingCheck]:
    from pipelines.ingest.log import current_parts
    from pipelines.schemas.bronze import bronze_models

    def contract(table: str, model: type[pa.DataFrameModel]) -> BlockingCheck:
        return _contract(
            f"bronze_{source}",
            f"bronze_{source}",
            table,
            model,
            load=lambda s: current_parts(_layout(s), source, table),
            inputs=lambda s: _part_lines(s, source, [table]),
        )

    checks = [contract(table, model) for table, model in bronze_models(source).items()]
    checks.append(
        BlockingCheck(
            f"bronze_{source}",
            f"bronze_{source}",
            "nothing_lost",
            "Per raw file: records read == bronze rows + quarantine rows.",
            judge=lambda s: verdicts.nothing_lost(source, s),
            inputs=lambda s: _reconcile_lines(s, source),
        )
    )
    return checks


def _silver_checks() -> list[BlockingCheck]:
    from pipelines.schemas.silver import SILVER_MODELS

    def contract(table: str, model: type[pa.DataFrameModel]) -> BlockingCheck:
        return _contract(
            "silver",
            f"silver_{table}",
            table,
            model,
            load="silver",
            inputs=lambda s: _silver_lines(s, [table]),
        )

    checks = [contract(table, model) for table, model in SILVER_MODELS.items()]
    checks.append(
        BlockingCheck(
            "silver",
            "silver_episodes",
            "references_resolve",
            "Every id a silver row points at (episode, turn, decision, context) exists.",
            judge=verdicts.references_resolve,
            inputs=lambda s: _silver_lines(s, SILVER_MODELS),
            additional_deps=tuple(f"silver_{t}" for t in SILVER_MODELS if t != "episodes"),
        )
    )
    return checks


def _gold_checks() -> list[BlockingCheck]:
    from pipelines.schemas.gold import GOLD_MODELS

    def contract(table: str, model: type[pa.DataFrameModel]) -> BlockingCheck:
        return _contract(
            "splits" if table == "splits" else "gold",
            f"gold_{table}",
            table,
            model,
            load="gold",
            inputs=lambda s: _gold_lines(s, [table]),
        )

    checks = [contract(table, model) for table, model in GOLD_MODELS.items()]
    checks.append(
        BlockingCheck(
            "gold",
            "gold_turn_rewards",
            "rewards_traceable",
            "Every reward is in [-1, 1], names a registered rule, and lists ≥1 feedback row that "
            "exists.",
            judge=verdicts.rewards_traceable,
            inputs=lambda s: [*_gold_lines(s, ["turn_rewards"]), *_silver_lines(s, ["feedback"])],
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
            inputs=lambda s: [
                *_gold_lines(s, ["splits"]),
                *_silver_lines(s, verdicts.SPLIT_SILVER),
                repr(s.splits),
            ],
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
            inputs=_release_lines,
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
            inputs=_release_lines,
        ),
    ]


def blocking_checks() -> list[BlockingCheck]:
    """Every blocking check of the project, made in one place."""
    from pipelines.config.names import SOURCES

    checks = [check for source in SOURCES for check in _bronze_checks(source)]
    return [*checks, *_silver_checks(), *_gold_checks(), *_release_checks()]
