"""The report's numbers on tiny frames, each expected value worked out by hand."""

from datetime import UTC, date, datetime

import polars as pl

from pipelines.reports import numbers


def _rewards() -> tuple[pl.DataFrame, pl.DataFrame]:
    turn_rewards = pl.DataFrame(
        {
            "episode_id": ["e1", "e1", "e2", "e3", "e3"],
            "reward_rule": ["r@1", "r@1", "r@1", "r@1", "q@1"],
            "reward": [-1.0, 0.5, 1.0, 0.0, 0.25],
        }
    )
    episodes = pl.DataFrame({"episode_id": ["e1", "e2", "e3"], "source": ["a", "a", "b"]})
    return turn_rewards, episodes


def test_reward_points_carry_the_source_of_their_episode_or_unknown():
    turn_rewards, episodes = _rewards()
    orphan = pl.DataFrame({"episode_id": ["e9"], "reward_rule": ["r@1"], "reward": [0.1]})
    points = numbers.reward_points(pl.concat([turn_rewards, orphan]), episodes)
    assert points.rows() == [
        ("(unknown)", "r@1", 0.1),
        ("a", "r@1", -1.0),
        ("a", "r@1", 0.5),
        ("a", "r@1", 1.0),
        ("b", "q@1", 0.25),
        ("b", "r@1", 0.0),
    ]


def test_reward_ticks_count_the_rewards_falling_on_each_hundredth():
    points = pl.DataFrame(
        {
            "source": ["a"] * 5 + ["b"],
            "reward_rule": ["r@1"] * 6,
            "reward": [0.501, 0.499, 0.5, -1.0, 0.123, 0.5],
        }
    )
    ticks = numbers.reward_ticks(points)
    # 0.501, 0.499 and 0.5 all fall on 0.50; 0.123 on 0.12; b's one reward on its own strip
    assert [(s, r, round(x, 2), n) for s, r, x, n in ticks.rows()] == [
        ("a", "r@1", -1.0, 1),
        ("a", "r@1", 0.12, 1),
        ("a", "r@1", 0.5, 3),
        ("b", "r@1", 0.5, 1),
    ]


def test_a_reward_plot_of_many_rewards_embeds_at_most_one_row_per_tick():
    from pipelines.reports import charts

    many = pl.DataFrame(
        {
            "source": ["a"] * 50_000,
            "reward_rule": ["r@1"] * 50_000,
            "reward": [i / 25_000 - 1 for i in range(50_000)],
        }
    )
    spec = charts.reward_distribution(numbers.reward_ticks(many))
    assert len(spec["data"]["values"]) == 201  # -1.00, -0.99, …, 1.00


def test_reward_stats_per_source_and_rule_count_signs_and_mean():
    stats = numbers.reward_stats(numbers.reward_points(*_rewards()))
    # a · r@1: -1, 0.5, 1 → mean 0.5/3 = 0.167; one negative, none zero, two positive
    assert stats.row(0, named=True) == {
        "source": "a",
        "reward_rule": "r@1",
        "rewards": 3,
        "min": -1.0,
        "mean": 0.167,
        "max": 1.0,
        "negative": 1,
        "zero": 0,
        "positive": 2,
    }
    assert stats.select("source", "reward_rule", "zero").rows() == [
        ("a", "r@1", 0),
        ("b", "q@1", 0),
        ("b", "r@1", 1),
    ]


def test_quarantine_by_night_counts_each_record_on_the_night_its_file_was_parsed():
    quarantine = pl.DataFrame(
        {
            "source": ["s", "s", "s", "t"],
            "file": ["f1", "f1", "f2", "gone"],
            "error_kind": ["invalid_json", "invalid_json", "orphan", "orphan"],
        }
    )
    logs = pl.DataFrame(
        {
            "source": ["s", "s"],
            "file": ["f1", "f2"],
            "parsed_at": [
                datetime(2026, 11, 20, 2, 0, tzinfo=UTC),
                datetime(2026, 11, 21, 23, 59, tzinfo=UTC),
            ],
        }
    )
    assert numbers.quarantine_by_night(quarantine, logs).rows() == [
        (date(2026, 11, 20), "s", "invalid_json", 2),
        (date(2026, 11, 21), "s", "orphan", 1),
        (None, "t", "orphan", 1),
    ]


def test_quarantine_examples_keep_one_cut_example_per_kind():
    long_raw = "x" * (numbers.EXAMPLE_CHARS + 40)
    quarantine = pl.DataFrame(
        {
            "source": ["s", "s", "s"],
            "stage": ["parse", "parse", "silver"],
            "error_kind": ["truncated", "truncated", "orphan"],
            "file": ["b.jsonl", "a.jsonl", "c.jsonl"],
            "locator": ["line 1", "line 9", "row 3"],
            "message": ["cut B", "cut A", "no parent"],
            "raw": ["{", long_raw, None],
        }
    )
    examples = numbers.quarantine_examples(quarantine)
    assert examples.select("error_kind", "n", "file", "message").rows() == [
        ("truncated", 2, "a.jsonl", "cut A"),
        ("orphan", 1, "c.jsonl", "no parent"),
    ]
    assert len(examples["raw"][0]) == numbers.EXAMPLE_CHARS


def test_split_sizes_count_groups_per_split():
    splits = pl.DataFrame({"group_id": ["g1", "g2", "g3"], "split": ["train", "test", "train"]})
    assert numbers.split_sizes(splits).rows() == [("test", 1), ("train", 2)]


def test_release_diff_counts_rows_added_and_removed_per_dataset_and_split():
    previous = {"counts": {"sft": {"train": 10, "test": 4}, "kto": {"train": 3}}}
    current = {"counts": {"sft": {"train": 12, "test": 4}, "dpo": {"train": 5}}}
    assert numbers.release_diff(previous, current).rows() == [
        ("dpo", "train", 0, 5, 5),
        ("kto", "train", 3, 0, -3),
        ("sft", "test", 4, 4, 0),
        ("sft", "train", 10, 12, 2),
    ]


def test_release_diff_without_a_previous_release_counts_everything_as_new():
    current = {"counts": {"sft": {"train": 7}}}
    assert numbers.release_diff(None, current).rows() == [("sft", "train", 0, 7, 7)]


def test_check_table_lists_failures_first_and_tells_blocking_from_warning():
    results = [
        numbers.CheckResult("a", "ok", passed=True, blocking=True),
        numbers.CheckResult("b", "soft", passed=False, blocking=False),
        numbers.CheckResult("c", "hard", passed=False, blocking=True, description="3 rows"),
    ]
    assert numbers.check_table(results).select("asset", "check", "result").rows() == [
        ("c", "hard", "FAILED"),
        ("b", "soft", "warning"),
        ("a", "ok", "passed"),
    ]


def test_a_plot_of_a_missing_mean_draws():
    """JSON has no NaN: a round without a mean is a gap (null) in the plot's data."""
    from pipelines.reports import charts

    rounds = pl.DataFrame({"round_number": [1, 2, 3], "mean_engagement": [0.5, float("nan"), 1.0]})
    spec = charts.engagement_over_rounds(rounds)
    assert [row["mean_engagement"] for row in spec["data"]["values"]] == [0.5, None, 1.0]
    assert "<svg" in charts.to_svg(spec)


def test_drawing_the_reports_plots_does_not_import_a_plot_library():
    """Importing Altair cost every build ~0.6 s of CPU for dicts written by hand now."""
    import subprocess
    import sys

    code = (
        "import sys, polars as pl; from pipelines.reports import charts, page; "
        "f = pl.DataFrame({'split': ['train'], 'groups': [3]}); "
        "assert '<svg' in charts.to_svg(charts.split_sizes(f)); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('altair', 'plotly')))"
    )
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "[]"
