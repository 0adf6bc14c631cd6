"""The build report of the demo build: written by every build, every section present, nothing
loaded from the network, `turnlake report` on its own."""

import re
from html.parser import HTMLParser
from pathlib import Path

import polars as pl
import pytest

from pipelines.cli.main import main
from pipelines.release.store.files import latest_release, read_manifest
from pipelines.reports.summary import build_summary
from pipelines.storage.layout import Layout

PLOTTED = ["rewards", "agreement", "q_values", "engagement", "quarantine", "splits", "release"]
TABLES_ONLY = ["replays", "rater_agreement", "reconciliation", "checks", "diff"]
# A URL a browser would fetch: src/href/url()/@import/srcset with a scheme or protocol-relative.
NETWORK = re.compile(
    r"""(?:\b(?:src|href|srcset|action|poster|data)\s*=\s*["']?\s*|url\(\s*["']?|@import\s+["']?)"""
    r"""(?:https?:|//)""",
    re.IGNORECASE,
)


class _Sections(HTMLParser):
    """Section ids, and per section how many <svg> and <table> it holds."""

    def __init__(self) -> None:
        super().__init__()
        self.current: str | None = None
        self.found: dict[str, dict[str, int]] = {}

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "section":
            self.current = attributes["id"]
            self.found[self.current] = {"svg": 0, "table": 0}
        elif tag in ("svg", "table") and self.current:
            self.found[self.current][tag] += 1


def _sections(html: str) -> dict[str, dict[str, int]]:
    parser = _Sections()
    parser.feed(html)
    return parser.found


def build_report(data_root: Path) -> Path:
    """The report the demo build wrote (not `latest.html`, which `turnlake report` rewrites)."""
    written = [p for p in (data_root / "reports").glob("*.html") if p.name != "latest.html"]
    assert written, f"no report under {data_root / 'reports'}"
    return min(written)


def test_every_build_writes_a_report_named_by_time_and_run(demo_warehouse):
    report = build_report(demo_warehouse)
    assert re.fullmatch(r"\d{8}T\d{6}Z-[0-9a-f-]{36}\.html", report.name)
    assert (demo_warehouse / "reports" / "latest.html").exists()


def test_report_has_every_section_with_its_plot_and_table(demo_warehouse):
    found = _sections(build_report(demo_warehouse).read_text())
    assert list(found) == [
        *PLOTTED[:4],
        *TABLES_ONLY[:2],
        "quarantine",
        "splits",
        *TABLES_ONLY[2:4],
    ] + [
        "release",
        "diff",
    ]
    for key in PLOTTED:
        assert found[key]["svg"] >= 1, f"section {key} has no plot"
    for key in PLOTTED + TABLES_ONLY:
        assert found[key]["table"] >= 1, f"section {key} has no table"


def test_report_shows_replay_agreement_for_the_demos_two_personas(demo_warehouse):
    html = build_report(demo_warehouse).read_text()
    replays = html[html.index('id="replays"') : html.index('id="quarantine"')]
    for persona in ("terse-critic", "cautious"):  # the demo's replay result files
        assert persona in replays, persona
    assert "agreement_rate" in replays


def test_report_shows_rater_agreement_with_alpha_and_the_names_not_computable(demo_warehouse):
    html = build_report(demo_warehouse).read_text()
    section = html[html.index('id="rater_agreement"') : html.index('id="quarantine"')]
    # the demo's OpenAssistant trees carry several readers' emoji votes per message
    assert "emoji" in section and "computed" in section
    assert "not computable" in section and "no item has ratings from 2 or more raters" in section


def test_report_lists_the_build_checks_trainability_included(demo_warehouse):
    html = build_report(demo_warehouse).read_text()
    checks = html[html.index('id="checks"') : html.index('id="release"')]
    for name in ("release_is_trainable", "release_verifies", "nothing_lost", "splits_leak_free"):
        assert name in checks, f"check {name} missing from the report"
    assert "FAILED" not in checks


def test_report_loads_nothing_from_the_network(demo_warehouse):
    html = build_report(demo_warehouse).read_text()
    assert "<script" not in html.lower()
    assert NETWORK.findall(html) == []


def test_network_pattern_catches_what_a_browser_would_fetch():
    for fetching in (
        '<script src="https://cdn.example/vega.js">',
        "<link href='//cdn.example/x.css'>",
        "<img src=http://x/y.png>",
        "style='background: url(https://x/y.png)'",
        '@import "https://x/y.css";',
    ):
        assert NETWORK.search(fetching), fetching
    assert not NETWORK.search('<svg xmlns="http://www.w3.org/2000/svg"><a href="#rewards">')


def test_summary_counts_rows_per_released_dataset_and_split(demo_warehouse):
    exports = Layout(demo_warehouse).exports
    release = exports / latest_release(exports)
    expected = sorted(
        (dataset.name, split, pl.scan_parquet(list(files)).select(pl.len()).collect().item())
        for dataset in release.iterdir()
        if dataset.is_dir()
        for split in {p.name.split(".")[0].split("-")[0] for p in dataset.glob("*.parquet")}
        for files in [sorted(dataset.glob(f"{split}*.parquet"))]
    )
    from pipelines.api import resolve_settings

    summary = build_summary(resolve_settings(data_root=demo_warehouse))
    assert sorted(summary.release_rows.rows()) == expected
    assert read_manifest(release)["version"] == release.name


def test_report_command_writes_latest_and_prints_its_path(demo_warehouse, new_dagster_home, capsys):
    mp = pytest.MonkeyPatch()
    mp.setenv("DAGSTER_HOME", str(new_dagster_home()))  # no run recorded there
    try:
        assert main(["report", "--data-root", str(demo_warehouse)]) == 0
    finally:
        mp.undo()
    out = capsys.readouterr().out.strip().splitlines()
    path = Path(out[-1].removeprefix("report: "))
    assert path.exists() and path.parent == demo_warehouse / "reports"
    latest = (demo_warehouse / "reports" / "latest.html").read_text()
    assert latest == path.read_text()
    assert "no build run recorded for this data root" in latest


def test_report_of_a_data_root_never_built_is_exit_2(tmp_path, capsys):
    assert main(["report", "--data-root", str(tmp_path / "data")]) == 2
    assert "turnlake report: nothing built under" in capsys.readouterr().err


def test_report_shows_each_sources_split_balance(demo_warehouse):
    from pipelines.api import resolve_settings
    from pipelines.storage import tables as stored

    found = _sections(build_report(demo_warehouse).read_text())
    assert found["splits"]["table"] == 2  # groups per split, episodes per source and split
    balance = build_summary(resolve_settings(data_root=demo_warehouse)).split_balance
    silver = stored.read(Layout(demo_warehouse), "silver", "episodes")
    per_source = dict(silver.group_by("source").len().iter_rows())
    totals = dict(balance.group_by("source").agg(pl.col("episodes").sum()).iter_rows())
    assert totals == per_source


def test_the_reward_plot_is_drawn_for_more_rewards_than_a_plot_should_embed(monkeypatch, tmp_path):
    """Altair refused a plot of more than 5 000 rows: at 100 MB of raw files (42 k turn rewards)
    the report was not written at all."""
    from pipelines.reports import numbers, page

    rewards = pl.DataFrame(
        {
            "episode_id": [f"e{i % 300}" for i in range(6_000)],
            "reward_rule": ["r@1"] * 6_000,
            "reward": [(i % 2001) / 1000 - 1 for i in range(6_000)],
        }
    )
    episodes = pl.DataFrame({"episode_id": [f"e{i}" for i in range(300)], "source": ["a"] * 300})
    tables = {"turn_rewards": rewards, "episodes": episodes}
    monkeypatch.setattr(
        numbers, "read_warehouse_table", lambda _, name, gold=False, columns=None: tables[name]
    )
    drawn = []
    section = page._reward_section(Layout(tmp_path), drawn.append)
    assert len(drawn) == 1 and section.tables[0][1]["rewards"].to_list() == [6_000]
