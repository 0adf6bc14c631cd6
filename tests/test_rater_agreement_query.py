"""`turnlake sql --saved rater_agreement` through DuckDB on the demo build (the shared one), its
alpha checked against the coincidence-matrix formula worked out here on the demo's own votes, and
the release card stating it."""

from __future__ import annotations

from collections import Counter
from itertools import product

import pytest

from pipelines.cli.main import main
from pipelines.release.store.files import latest_release, read_manifest
from pipelines.storage.layout import Layout
from pipelines.warehouse.queries import saved_queries
from pipelines.warehouse.views import query


def _nominal_alpha(units: list[Counter]) -> float:
    """Krippendorff's alpha from its definition: coincidences o_ck = Σ_u n_uc·(n_uk − [c=k]) /
    (m_u − 1) over units with m_u ≥ 2; D_o = Σ_{c≠k} o_ck / n; D_e = Σ_{c≠k} n_c·n_k / (n(n−1))."""
    o: Counter = Counter()
    for unit in units:
        m = sum(unit.values())
        if m < 2:
            continue
        for c, k in product(unit, unit):
            o[c, k] += unit[c] * (unit[k] - (c == k)) / (m - 1)
    n_c: Counter = Counter()
    for (c, _), v in o.items():
        n_c[c] += v
    n = sum(n_c.values())
    observed = sum(v for (c, k), v in o.items() if c != k) / n
    expected = sum(n_c[c] * n_c[k] for c, k in product(n_c, n_c) if c != k) / (n * (n - 1))
    return 1 - observed / expected


@pytest.fixture(scope="module")
def data_root(demo_warehouse):
    return demo_warehouse


def test_saved_rater_agreement_gives_the_demo_emoji_votes_alpha(data_root):
    layout = Layout(data_root)
    table = query(layout, saved_queries()["rater_agreement"].sql)
    rows = {(r["name"], r["level"]): r for r in table.iter_rows(named=True)}
    votes = query(
        layout,
        "SELECT turn_id, value_text, value_num FROM feedback "
        "WHERE name = 'emoji' AND value_text IN ('+1', '-1') AND value_num > 0",
    )
    units: dict[str, Counter] = {}
    for turn, label, count in votes.iter_rows():
        units.setdefault(turn, Counter())[label] += int(count)
    pairable = [u for u in units.values() if sum(u.values()) >= 2]
    emoji = rows["emoji", "nominal"]
    assert emoji["status"] == "computed"
    assert emoji["alpha"] == pytest.approx(_nominal_alpha(pairable), abs=5e-4)  # SQL rounds to 3
    assert emoji["n_items"] == len(pairable)
    assert emoji["n_ratings"] == sum(sum(u.values()) for u in pairable)
    # a study step has one judge: never a number for judge_stance
    judge = rows["judge_stance", "nominal"]
    assert (judge["alpha"], judge["status"]) == (None, "not computable")
    assert judge["reason"] == "no item has ratings from 2 or more raters"


def test_cli_runs_the_saved_rater_agreement_query(data_root, capsys):
    assert main(["sql", "--data-root", str(data_root), "--saved", "rater_agreement"]) == 0
    out = capsys.readouterr().out
    assert "emoji" in out and "not computable" in out


def test_the_demo_release_card_and_manifest_state_the_agreement(data_root):
    exports = Layout(data_root).exports
    release = exports / latest_release(exports)
    card = (release / "README.md").read_text()
    assert "## Rater agreement" in card and "| `emoji` | nominal |" in card
    manifest = read_manifest(release)
    names = {r["name"] for r in manifest["rater_agreement"]}
    assert {"emoji", "rating", "judge_stance"} <= names
    assert "min_raters" not in manifest["config"]["release"]  # no minimum: config as before
