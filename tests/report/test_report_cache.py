"""A rebuild that changed nothing draws no plot again and reuses the page (issue 15)."""

import shutil
from datetime import UTC, datetime

from pipelines.api.report import write_build_report
from pipelines.api.roots import resolve_settings
from pipelines.reports import cache, page
from pipelines.reports.summary import build_summary

PLOTS_OF_THE_DEMO = 7  # rewards, agreement, q_values, engagement, quarantine, splits, release


def test_a_second_identical_report_draws_nothing_and_reuses_the_page(
    demo_warehouse, tmp_path, monkeypatch
):
    data = tmp_path / "data"
    # A copy without the kept SVGs and page of the demo build's own report.
    shutil.copytree(demo_warehouse, data, ignore=shutil.ignore_patterns("report"))
    drawn, rendered = [], []
    draw, render = cache.draw_svg, page.render_report
    monkeypatch.setattr(cache, "draw_svg", lambda spec: drawn.append(spec) or draw(spec))
    monkeypatch.setattr(page, "render_report", lambda *a: rendered.append(a) or render(*a))
    settings = resolve_settings(raw_root=data / "raw", data_root=data)
    summary = build_summary(settings)

    first = write_build_report(settings, summary, "run-one", datetime(2026, 1, 1, tzinfo=UTC), [])
    assert (len(drawn), len(rendered)) == (PLOTS_OF_THE_DEMO, 1)
    drawn.clear(), rendered.clear()
    second = write_build_report(settings, summary, "run-two", datetime(2026, 1, 2, tzinfo=UTC), [])

    assert (drawn, rendered) == ([], [])
    assert first != second  # the run's own file is still written
    expected = first.read_text().replace("run-one at 2026-01-01", "run-two at 2026-01-02")
    assert second.read_text() == expected
    assert (data / "reports" / "latest.html").read_text() == expected


def test_a_changed_plot_is_drawn_again_and_unused_svgs_are_dropped(tmp_path, monkeypatch):
    import altair as alt
    import polars as pl

    drawn = []
    monkeypatch.setattr(cache, "draw_svg", lambda spec: drawn.append(spec) or "<svg/>")

    def chart(values):
        return alt.Chart(pl.DataFrame({"x": values})).mark_bar().encode(x="x:Q")

    cache.SvgCache(tmp_path)(chart([1, 2]))
    later = cache.SvgCache(tmp_path)
    later(chart([1, 3]))  # one value changed: a new spec
    later.prune()
    assert len(drawn) == 2
    assert [p.stem for p in tmp_path.glob("*.svg")] == list(later.used)
