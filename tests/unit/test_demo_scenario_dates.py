"""The demo's scenarios stay in the years the scenario adapter accepts at any scale (the 1 GB
benchmark corpus has over 20 000 scenarios)."""

from pipelines.demo.scenario import scenario_day


def test_scenario_starts_every_three_days_then_wraps_after_twenty_years():
    assert [scenario_day(i) for i in (0, 1, 2)] == [0, 3, 6]
    assert scenario_day(2433) == 7299  # 2433 * 3, the last day before the wrap
    assert scenario_day(2434) == 2  # 7302 - 7300
    assert max(scenario_day(i) for i in range(30_000)) < 20 * 365  # 2025-09-01 + 20 y < 2100
