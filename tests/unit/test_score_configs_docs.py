"""docs/concepts/scores.md holds the shipped registry's table, so it cannot drift from scores.toml.

`uv run python -m tests.unit.test_score_configs_docs` rewrites the table from scores.toml.
"""

from __future__ import annotations

from pathlib import Path

from pipelines.config.scores import SCORES_FILE, load_scores

PAGE = Path(__file__).resolve().parents[2] / "docs" / "concepts" / "scores.md"
BEGIN, END = "<!-- score configs: begin -->\n", "<!-- score configs: end -->"


def registry_table() -> str:
    rows = [
        "| name | type | scales | range / categories | sources | description |",
        "|---|---|---|---|---|---|",
    ]
    for name, config in load_scores(SCORES_FILE).items():
        bounds = [f"range [{config.range[0]:g}, {config.range[1]:g}]"] if config.range else []
        bounds += [", ".join(f"`{c}`" for c in config.categories)] if config.categories else []
        cells = [
            f"`{name}`",
            ", ".join(config.types),
            ", ".join(f"`{s}`" for s in config.scales),
            "; ".join(bounds),
            ", ".join(config.sources),
            config.description.replace("|", "\\|"),
        ]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"


def _block(page: str) -> str:
    return page.split(BEGIN, 1)[1].split(END, 1)[0]


def test_the_page_holds_the_shipped_registry():
    assert _block(PAGE.read_text()) == registry_table()


def test_the_table_names_every_config_once():
    table = registry_table()
    assert table.count("\n| `") == len(load_scores(SCORES_FILE)) == 35
    assert (
        "| `rating` | numeric | `[-1,1]`, `[0,1]`, `1-5`, `unknown` |  | dialogue, decision |"
        in (table)
    )


if __name__ == "__main__":
    page = PAGE.read_text()
    PAGE.write_text(page.replace(_block(page), "", 1).replace(BEGIN, BEGIN + registry_table(), 1))
