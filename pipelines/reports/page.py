"""The build report: one self-contained HTML page per run under `<data root>/reports/`.

Numbers come from `numbers.py` and the saved research queries, plots from `charts.py` (inline
SVG), the page from `templates/report.html.j2`. Nothing in the page loads anything.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import orjson
import polars as pl

from pipelines.config.names import SOURCES
from pipelines.ingest.log import read_log
from pipelines.release.store.files import (
    SPLIT_PROOF,
    complete_releases,
    latest_release,
    manifest_counts,
)
from pipelines.reports import charts, numbers
from pipelines.reports.section import Section
from pipelines.storage.files import write_bytes_atomic
from pipelines.storage.layout import Layout

if TYPE_CHECKING:
    from pipelines.reports.summary import BuildSummary

TEMPLATES = Path(__file__).parent / "templates"
LATEST_REPORT = "latest.html"
REWARD_COLUMNS = ["episode_id", "reward_rule", "reward"]  # what numbers.reward_points reads


# The saved research queries the page shows.
SHOWN_QUERIES = (
    "agreement_by_policy",
    "q_values_over_turns",
    "agent_engagement_over_rounds",
    "replay_agreement",
    "rater_agreement",
)


def _saved(layout: Layout) -> dict[str, pl.DataFrame | None]:
    """The answers of `SHOWN_QUERIES` over the warehouse views (None each before the first
    build), through one read-only connection: each opening reads the catalog the build just
    rewrote again (~0.06 s of CPU apiece, measured)."""
    import duckdb

    from pipelines.warehouse.queries import saved_queries

    if not layout.duckdb.exists():
        return dict.fromkeys(SHOWN_QUERIES)
    queries = saved_queries()
    with duckdb.connect(str(layout.duckdb), read_only=True) as con:
        return {name: con.sql(queries[name].sql).pl() for name in SHOWN_QUERIES}


Draw = Callable[[charts.Spec], str]  # a chart → its SVG (charts.to_svg)


def _plotted(
    key: str,
    title: str,
    frame: pl.DataFrame | None,
    chart: Callable | None,
    note: str | None = None,
    draw: Draw = charts.to_svg,
) -> Section:
    """A plot and its table, or a note saying there is nothing to plot."""
    if frame is None or frame.height == 0 or chart is None:
        return Section(key, title, note="nothing to plot: no rows (not built, or no such data)")
    return Section(key, title, draw(chart(frame)), [("", frame)], note)


def _table_section(key: str, title: str, frame: pl.DataFrame | None, note: str) -> Section:
    """A table, or a note saying there is nothing to show."""
    if frame is None or frame.height == 0:
        return Section(key, title, note="nothing to show: no rows (not built, or no such data)")
    return Section(key, title, tables=[("", frame)], note=note)


def _reward_section(layout: Layout, draw: Draw) -> Section:
    rewards = numbers.read_warehouse_table(
        layout, "turn_rewards", gold=True, columns=REWARD_COLUMNS
    )
    episodes = numbers.read_warehouse_table(layout, "episodes", columns=["episode_id", "source"])
    if rewards is None or episodes is None or rewards.height == 0:
        return _plotted("rewards", "Reward distributions per source and rule", None, None)
    points = numbers.reward_points(rewards, episodes)
    return Section(
        "rewards",
        "Reward distributions per source and rule",
        draw(charts.reward_distribution(numbers.reward_ticks(points))),
        [("", numbers.reward_stats(points))],
    )


def _quarantine_section(layout: Layout, draw: Draw) -> Section:
    quarantine = numbers.read_warehouse_table(layout, "quarantine")
    if quarantine is None or quarantine.height == 0:
        return _plotted("quarantine", "Quarantine by kind over nights", None, None)
    logs = pl.concat([read_log(layout, source) for source in SOURCES])
    by_night = numbers.quarantine_by_night(quarantine, logs)
    return Section(
        "quarantine",
        "Quarantine by kind over nights",
        draw(charts.quarantine_by_night(by_night)),
        [("By night", by_night), ("Examples", numbers.quarantine_examples(quarantine))],
        "night = UTC date the raw file was last parsed (ingest logs)",
    )


def _release_sections(layout: Layout, draw: Draw) -> list[Section]:
    version = latest_release(layout.exports)
    if version is None:
        note = "no release yet"
        return [
            Section("release", "Release contents", note=note),
            Section("diff", "Changes since the previous release", note=note),
        ]
    versions = complete_releases(layout.exports)
    current = {"counts": manifest_counts(layout.release(version))}
    earlier = versions[: versions.index(version)] if version in versions else []
    previous = {"counts": manifest_counts(layout.release(earlier[-1]))} if earlier else None
    contents = numbers.release_contents(current)
    diff_note = f"{version} against {earlier[-1]}" if earlier else f"{version} is the first release"
    return [
        _plotted(
            "release",
            "Release contents",
            contents,
            charts.release_contents,
            f"release {version}",
            draw,
        ),
        Section(
            "diff",
            "Changes since the previous release",
            tables=[("", numbers.release_diff(previous, current))],
            note=diff_note,
        ),
        *_decontamination_section(layout.release(version)),
    ]


def _decontamination_section(folder: Path) -> list[Section]:
    """The rows `[release] decontaminate` took out of train and validation (none configured: no
    section), from the release's split proof."""
    path = folder / SPLIT_PROOF
    found = orjson.loads(path.read_bytes()).get("decontamination") if path.exists() else None
    if not found:
        return []
    left = pl.DataFrame(
        [(s, d, n) for s, per in found["rows_left"].items() for d, n in sorted(per.items())],
        schema={"evaluation set": pl.String, "dataset": pl.String, "rows": pl.Int64},
        orient="row",
    )
    note = "rows whose user text overlaps an evaluation prompt, out of train and validation"
    return [Section("decontamination", "Rows decontaminated", tables=[("", left)], note=note)]


def _split_section(splits: pl.DataFrame | None, summary: BuildSummary, draw: Draw) -> Section:
    """Groups per split, and how each source's episodes fall into the splits (whole groups move
    a source's shares away from the ratios: pipelines/splits/balance.py)."""
    section = _plotted(
        "splits",
        "Split sizes",
        numbers.split_sizes(splits) if splits is not None else None,
        charts.split_sizes,
        draw=draw,
    )
    if not summary.split_balance.height:
        return section
    warnings = summary.split_warnings
    note = (
        "Far from the configured ratios: " + "; ".join(warnings)
        if warnings
        else "Every source's split shares are within half of their configured ratios."
    )
    tables = [*section.tables, ("Episodes per source and split", summary.split_balance)]
    return Section(section.key, section.title, section.svg, tables, note)


def gather_sections(
    layout: Layout,
    summary: BuildSummary,
    checks: list[numbers.CheckResult] | None,
    draw: Draw = charts.to_svg,
) -> list[Section]:
    """Every section of the report, in page order; `draw` turns each chart into its SVG."""
    splits = numbers.read_warehouse_table(layout, "splits", gold=True)
    saved = _saved(layout)
    check_note = None if checks is not None else "no build run recorded for this data root"
    return [
        _reward_section(layout, draw),
        _plotted(
            "agreement",
            "Agreement by IQL policy and character (study)",
            saved["agreement_by_policy"],
            charts.agreement_by_policy,
            "cell text: steps",
            draw,
        ),
        _plotted(
            "q_values",
            "Q-values over turns (study)",
            saved["q_values_over_turns"],
            charts.q_values_over_turns,
            draw=draw,
        ),
        _plotted(
            "engagement",
            "Agent engagement over rounds (Social RL)",
            saved["agent_engagement_over_rounds"],
            charts.engagement_over_rounds,
            draw=draw,
        ),
        _table_section(
            "replays",
            "Decision replays: agreement with the original action per persona and domain",
            saved["replay_agreement"],
            "`turnlake decision replay` sets, their results ingested from <raw root>/replays/",
        ),
        _table_section(
            "rater_agreement",
            "Inter-rater agreement: Krippendorff's alpha per score name",
            saved["rater_agreement"],
            "items: targets rated by 2 or more raters; level of measurement from scores.toml "
            "(docs/concepts/agreement.md)",
        ),
        _quarantine_section(layout, draw),
        _split_section(splits, summary, draw),
        Section(
            "reconciliation",
            "Reconciliation per source (records read = bronze + quarantined)",
            tables=[("", summary.reconciliation)],
        ),
        Section(
            "checks",
            "Check results (blocking checks, trainability included)",
            tables=[("", numbers.check_table(checks or []))],
            note=check_note,
        ),
        *_release_sections(layout, draw),
    ]


def render_report(sections: list[Section], title: str, subtitle: str) -> str:
    """The page as one HTML string (autoescaped; only the SVGs go in as markup)."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True, keep_trailing_newline=True
    )
    return env.get_template("report.html.j2").render(
        title=title, subtitle=subtitle, sections=sections
    )


def report_name(run_time: datetime, run_id: str) -> str:
    """`<UTC run time>-<run id>.html`: sorts by time, names the Dagster run."""
    return f"{run_time.strftime('%Y%m%dT%H%M%SZ')}-{run_id}.html"


def write_report(layout: Layout, html: str, run_time: datetime, run_id: str) -> Path:
    """Write the page under `reports/` and as `reports/latest.html`; returns the run's file."""
    path = layout.reports / report_name(run_time, run_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = html.encode("utf-8")
    write_bytes_atomic(path, data)
    write_bytes_atomic(layout.reports / LATEST_REPORT, data)
    return path
