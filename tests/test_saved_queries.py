"""Every saved research query returns rows on the demo data (built once, through the CLI)."""

import pytest

from pipelines.cli.main import main
from pipelines.storage.layout import Layout
from pipelines.warehouse.queries import saved_queries
from pipelines.warehouse.views import query


@pytest.fixture(scope="module")
def demo_data_root(demo_warehouse):
    return demo_warehouse


def test_the_issue_research_questions_all_have_a_saved_query():
    names = set(saved_queries())
    assert {
        "agreement_by_policy",
        "agreement_by_character",
        "persuasion_strategies",
        "q_values_over_turns",
        "checkpoint_timing_vs_iteration",
        "moderator_significance_followed",
        "synthesis_length_vs_validation",
        "agent_engagement_over_rounds",
        "human_override_rate",
        "outcomes_by_demographics",
        "policy_effect_by_openness",
        "moral_foundations_vs_resistance",
    } <= names
    assert all(q.description for q in saved_queries().values())


@pytest.mark.parametrize("name", sorted(saved_queries()))
def test_saved_query_returns_rows_on_demo_data(demo_data_root, name):
    frame = query(Layout(demo_data_root), saved_queries()[name].sql)
    assert frame.height > 0, f"saved query {name} returned no rows on the demo data"


def test_cli_lists_and_runs_saved_queries(demo_data_root, capsys):
    assert main(["sql", "--list"]) == 0
    assert "human_override_rate" in capsys.readouterr().out
    assert main(["sql", "--data-root", str(demo_data_root), "--saved", "rewards_by_rule"]) == 0
    assert "dialogue_feedback@1" in capsys.readouterr().out
    assert main(["sql", "--data-root", str(demo_data_root), "--saved", "no_such_query"]) == 2
