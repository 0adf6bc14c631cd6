"""The build summary's reconciliation taken from the `nothing_lost` checks' totals of the run,
not reconciled again."""

import polars as pl

from pipelines.config.names import SOURCES
from pipelines.reports.summary import _reconciliation
from pipelines.storage.layout import Layout


def _totals(i: int, unbalanced: int) -> dict[str, int]:
    return {
        "files": i,
        "records_read": 10 * i + 3,
        "bronze_rows": 10 * i,
        "quarantine_rows": 2,
        "n_pending": 100 + i,
        "unbalanced_files": unbalanced,
    }


def test_summary_reconciliation_is_the_checks_totals_per_source(tmp_path):
    checked = {s: _totals(i, unbalanced=int(s == "study")) for i, s in enumerate(SOURCES)}
    rec = _reconciliation(Layout(tmp_path / "no-build"), checked)
    assert rec["source"].to_list() == list(SOURCES)
    study = rec.filter(pl.col("source") == "study").row(0, named=True)
    i = list(SOURCES).index("study")
    assert study == {
        "source": "study",
        "files": i,
        "records_read": 10 * i + 3,
        "bronze_rows": 10 * i,
        "quarantine_rows": 2,
        "pending": 100 + i,
        "balanced": False,
    }
    assert rec.filter(pl.col("source") != "study")["balanced"].all()
    assert rec["files"].to_list() == list(range(len(SOURCES)))


def test_summary_reconciles_a_source_its_check_did_not_judge(tmp_path):
    checked = {s: _totals(5, 0) for s in SOURCES if s != "oasst"}
    rec = _reconciliation(Layout(tmp_path / "no-build"), checked)
    oasst = rec.filter(pl.col("source") == "oasst").row(0, named=True)
    assert oasst["files"] == 0 and oasst["records_read"] == 0 and oasst["balanced"]
    assert rec.filter(pl.col("source") != "oasst")["files"].to_list() == [5] * (len(SOURCES) - 1)
