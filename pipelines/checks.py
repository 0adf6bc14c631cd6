"""One factory for the blocking checks: every table's Pandera contract at data depth,
plus the nothing-lost reconciliation, silver referential integrity and reward provenance."""



from collections.abc import Callable
from dataclasses import dataclass

import dagster as dg
import pandera.polars as pa
import polars as pl

from pipelines.config import Settings


@dataclass(frozen=True)
class TableContract:
    asset: str  # asset key the check is attached to
    table: str  # table name (several bronze tables can belong to one asset)
    model: type[pa.DataFrameModel]
    load: Callable[[Settings], pl.DataFrame]


def validate_frame(model: type[pa.DataFrameModel], frame: pl.DataFrame) -> dg.AssetCheckResult:
    """Validate schema AND data (an eager frame is checked at data depth by Pandera)."""
    try:
        model.validate(frame, lazy=True)
    except pa.errors.SchemaErrors as err:
        cases = err.failure_cases
        summary = (
            cases.group_by("column", "check").agg(pl.len().alias("n"), pl.col("failure_case").first().alias("example"))
            .sort("n", descending=True)
        )
        return dg.AssetCheckResult(
            passed=False,
            severity=dg.AssetCheckSeverity.ERROR,
            metadata={"rows": frame.height, "failures": cases.height,
                      "failure_summary": dg.MetadataValue.md(_markdown(summary))},
        )
    return dg.AssetCheckResult(passed=True, metadata={"rows": frame.height})


def _markdown(frame: pl.DataFrame) -> str:
    header = "| " + " | ".join(frame.columns) + " |\n|" + "---|" * frame.width + "\n"
    body = "".join("| " + " | ".join(str(v)[:80] for v in row) + " |\n" for row in frame.iter_rows())
    return header + body


def build_schema_checks(
    contracts: list[TableContract], settings_of: Callable[[object], Settings]
) -> list[dg.AssetChecksDefinition]:
    """A blocking Pandera check per table; `settings_of(resource)` resolves the run's settings."""
    return [_schema_check(contract, settings_of) for contract in contracts]


def _schema_check(contract: TableContract, settings_of) -> dg.AssetChecksDefinition:
    @dg.asset_check(
        asset=contract.asset,
        name=f"{contract.table}_matches_contract",
        blocking=True,
        description=f"`{contract.table}` satisfies `{contract.model.__name__}` (schema and data).",
        required_resource_keys={"turnlake"},
    )
    def _check(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
        settings = settings_of(context.resources.turnlake)
        return validate_frame(contract.model, contract.load(settings))

    return _check


def _layout(context: dg.AssetCheckExecutionContext, settings_of):
    from pipelines.layout import Layout

    return Layout(settings_of(context.resources.turnlake).data_root)


def table_contracts() -> list[TableContract]:
    """Every bronze and silver table with the model it must satisfy and how to load it."""
    from pipelines.config import SOURCES
    from pipelines.ingest import scan_current
    from pipelines.io import read_table
    from pipelines.layout import Layout
    from pipelines.schemas import polars_schema
    from pipelines.schemas.bronze import bronze_models
    from pipelines.schemas.gold import GOLD_MODELS
    from pipelines.schemas.silver import SILVER_MODELS

    def bronze_loader(source, table, model):
        return lambda s: scan_current(Layout(s.data_root), source, table, polars_schema(model)).collect()

    def silver_loader(table):
        return lambda s: read_table(Layout(s.data_root).silver(table))

    contracts = [
        TableContract(f"bronze_{source}", table, model, bronze_loader(source, table, model))
        for source in SOURCES
        for table, model in bronze_models(source).items()
    ]
    contracts += [
        TableContract(f"silver_{table}", table, model, silver_loader(table))
        for table, model in SILVER_MODELS.items()
    ]
    contracts += [
        TableContract(f"gold_{table}", table, model, lambda s, t=table: read_table(Layout(s.data_root).gold(t)))
        for table, model in GOLD_MODELS.items()
    ]
    return contracts


def _reconciliation_check(source: str, settings_of) -> dg.AssetChecksDefinition:
    from pipelines.reconcile import reconcile_source

    @dg.asset_check(
        asset=f"bronze_{source}",
        name="nothing_lost",
        blocking=True,
        description="Per raw file: records read == bronze rows + quarantine rows.",
        required_resource_keys={"turnlake"},
    )
    def _check(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
        per_file = reconcile_source(source, _layout(context, settings_of))
        bad = per_file.filter(~pl.col("balanced"))
        totals = per_file.select(pl.col("records_read", "bronze_rows", "quarantine_rows", "n_pending").sum())
        metadata = {k: int(v or 0) for k, v in totals.row(0, named=True).items()}
        metadata["files"] = per_file.height
        metadata["unbalanced_files"] = bad.height
        if bad.height:
            metadata["unbalanced"] = dg.MetadataValue.md(_markdown(bad.head(20)))
        return dg.AssetCheckResult(passed=bad.height == 0, metadata=metadata)

    return _check


def _integrity_check(settings_of) -> dg.AssetChecksDefinition:
    from pipelines.integrity import dangling_references
    from pipelines.io import read_table
    from pipelines.schemas.silver import SILVER_MODELS

    @dg.asset_check(
        asset="silver_episodes",
        name="references_resolve",
        blocking=True,
        additional_deps=[f"silver_{t}" for t in SILVER_MODELS if t != "episodes"],
        description="Every id a silver row points at (episode, turn, decision, context) exists.",
        required_resource_keys={"turnlake"},
    )
    def _check(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
        layout = _layout(context, settings_of)
        tables = {t: read_table(layout.silver(t)) for t in SILVER_MODELS}
        problems = dangling_references(tables)
        return dg.AssetCheckResult(passed=not problems, metadata={k: v for k, v in problems.items()})

    return _check


def _reward_provenance_check(settings_of) -> dg.AssetChecksDefinition:
    from pipelines.gold.provenance import reward_problems
    from pipelines.io import read_table

    @dg.asset_check(
        asset="gold_turn_rewards",
        name="rewards_traceable",
        blocking=True,
        additional_deps=["silver_feedback"],
        description="Every reward is in [-1, 1], names a registered rule, and lists ≥1 feedback row that exists.",
        required_resource_keys={"turnlake"},
    )
    def _check(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
        layout = _layout(context, settings_of)
        rewards = read_table(layout.gold("turn_rewards"))
        problems = reward_problems(rewards, read_table(layout.silver("feedback")))
        return dg.AssetCheckResult(passed=not problems, metadata={"rows": rewards.height, **problems})

    return _check


def _splits_check(settings_of) -> dg.AssetChecksDefinition:
    from pipelines.io import read_table
    from pipelines.layout import Layout
    from pipelines.splits import proof_problems, split_proof

    @dg.asset_check(
        asset="gold_splits",
        name="splits_leak_free",
        blocking=True,
        additional_deps=["silver_episodes", "silver_turns", "silver_decisions", "silver_feedback"],
        description="Every group has exactly one split and no group or human participant is in two splits "
        "(prompts are proven at release time, over the datasets).",
        required_resource_keys={"turnlake"},
    )
    def _check(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
        settings = settings_of(context.resources.turnlake)
        layout = Layout(settings.data_root)
        silver = {t: read_table(layout.silver(t)) for t in ("episodes", "turns", "decisions", "feedback")}
        config = settings.splits  # also re-checks split vs ratios
        proof = split_proof(read_table(layout.gold("splits")), silver, {}, config)
        problems = proof_problems(proof)
        metadata = {f"groups_{k}": v for k, v in proof["groups_per_split"].items()}
        metadata |= {f"participants_{k}": v for k, v in proof["participants_per_split"].items()}
        metadata |= {f"{k}_overlap": v["count"] for k, v in proof["overlaps"].items()}
        if problems:
            metadata["problems"] = "; ".join(problems)[:2000]
        return dg.AssetCheckResult(passed=not problems, metadata=metadata)

    return _check


def _release_check(settings_of) -> dg.AssetChecksDefinition:
    from pipelines.release.files import latest_release
    from pipelines.release.verify import verify_release

    @dg.asset_check(
        asset="release",
        name="release_verifies",
        blocking=True,
        description="Every file of the latest release matches its manifest (sha256, rows); the split proof holds.",
        required_resource_keys={"turnlake"},
    )
    def _check(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
        exports = _layout(context, settings_of).exports
        version = latest_release(exports)
        problems = verify_release(exports / version) if version else ["no complete release"]
        return dg.AssetCheckResult(
            passed=not problems,
            metadata={"version": str(version), "problems": len(problems), "first_problems": "; ".join(problems[:5])},
        )

    return _check


def build_blocking_checks(settings_of) -> list[dg.AssetChecksDefinition]:
    """All blocking checks of the project, made in one place."""
    from pipelines.config import SOURCES

    checks = build_schema_checks(table_contracts(), settings_of)
    checks += [_reconciliation_check(source, settings_of) for source in SOURCES]
    checks.append(_integrity_check(settings_of))
    checks.append(_reward_provenance_check(settings_of))
    checks.append(_splits_check(settings_of))
    checks.append(_release_check(settings_of))
    return checks
