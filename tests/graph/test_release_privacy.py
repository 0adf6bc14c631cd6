"""No release built from the demo data contains a real participant id, e-mail address or phone
number."""

import re
from pathlib import Path

import polars as pl
import pytest

from pipelines.privacy.known_names import known_names, name_pattern
from pipelines.privacy.redact import Redactor
from pipelines.release.privatize.privatize import subject_ids
from pipelines.release.store.files import LEDGER, latest_release
from pipelines.release.store.verify import verify_release
from pipelines.schemas.silver import SILVER_MODELS
from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout


def released_text(release: Path) -> str:
    """Everything a release holds, as text: each Parquet file's decoded rows and key-value metadata
    (a byte search cannot see a string inside a compressed page), every other file as it is."""
    parts = []
    for path in sorted(p for p in release.rglob("*") if p.is_file()):
        if path.suffix == ".parquet":
            parts += [pl.read_parquet(path).write_ndjson(), str(pl.read_parquet_metadata(path))]
        else:
            parts.append(path.read_text(encoding="utf-8"))
    return "\n".join(parts)


@pytest.fixture(scope="module")
def demo_release(demo_warehouse):
    layout = Layout(demo_warehouse)
    release = layout.exports / latest_release(layout.exports)
    silver = {t: stored.read(layout, "silver", t) for t in SILVER_MODELS}
    return release, silver, released_text(release), demo_warehouse


def test_release_contains_no_real_subject_id(demo_release):
    release, silver, text, _ = demo_release
    ids = [i for i in subject_ids(silver) if len(i) >= 6]
    assert ids, "the demo data should have human subjects"
    leaked = [i for i in ids if i in text]
    assert leaked == []
    assert verify_release(release) == []


def test_release_text_has_no_email_or_phone_left(demo_release):
    _, _, text, _ = demo_release
    found = [kind for _, _, kind in Redactor().find(text) if kind in ("email", "phone")]
    assert found == []


def test_release_text_names_no_agent_or_participant_its_episode_knows(demo_release):
    release, silver, _, _ = demo_release
    names = known_names(silver).get_column("name").unique().to_list()
    # written by hand: the demo's Social RL agents and its decision and dialogue users
    assert {"Ben", "Alice", "Marta", "Ana", "Marcus", "Joel", "Priya"} <= set(names)
    named = re.compile(name_pattern(names))
    left = []
    for path in sorted(release.rglob("*.parquet")):
        frame = pl.read_parquet(path)
        # ids (`actor_id` Worker+Ben, an agent's `policy`) stay ids; free text holds no name
        text = frame.select(c for c in frame.columns if not c.endswith(("_id", "_ids", "policy")))
        left += [(path.name, m) for m in named.findall(text.write_ndjson())]
    assert left == []
    ledger = pl.read_json(release / LEDGER).to_dicts()[0]
    assert sum(counts.get("known_name", 0) for counts in ledger.values()) > 0


def test_release_ships_a_ledger_with_counts_only_and_the_key_stays_outside(demo_release):
    release, _, text, data = demo_release
    ledger = pl.read_json(release / LEDGER).to_dicts()[0]
    assert ledger and all(isinstance(v, dict) for v in ledger.values())
    assert any(counts.get("pseudonym", 0) > 0 for counts in ledger.values())
    key = (data / ".turnlake" / "pseudonym.key").read_text().strip()
    assert len(key) >= 32 and key not in text


def test_study_groups_are_real_in_silver_and_pseudonyms_in_the_release(demo_release):
    release, silver, _, _ = demo_release
    real = set(silver["episodes"].filter(pl.col("source") == "study")["group_id"])
    released = set(
        pl.read_parquet(release / "sft" / "*.parquet").filter(pl.col("source") == "study")[
            "group_id"
        ]
    )
    assert real and released
    assert released.isdisjoint(real) and all(g.startswith("person_") for g in released)
