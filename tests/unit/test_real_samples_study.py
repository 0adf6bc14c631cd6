"""Conformance: the real study files (shared, never copied into the repo) ingest with nothing
lost."""

from __future__ import annotations

from pathlib import Path

import orjson
import polars as pl
import pytest

from pipelines.config.settings import Settings
from pipelines.schemas import conform, silver_schema
from pipelines.schemas.bronze.study import BRONZE_MODELS
from pipelines.schemas.silver import SILVER_MODELS
from pipelines.sources import study
from pipelines.transforms.study import to_silver

REAL = (
    Path(__file__).resolve().parents[2].parent / "shared" / "real_samples" / "wildfire_persuasion"
)


@pytest.fixture(scope="module")
def real() -> dict:
    if not (REAL / "survey_responses").is_dir():
        pytest.skip(f"real samples not present at {REAL}")
    files = study.discover(REAL)
    results = {f.rel_path: study.parse_file(f, f.path.read_bytes(), Settings()) for f in files}
    bronze = {name: pl.concat([r.tables[name] for r in results.values()]) for name in BRONZE_MODELS}
    out = to_silver({k: v.lazy() for k, v in bronze.items()}, Settings())
    silver = {
        t: SILVER_MODELS[t].validate(conform(f, silver_schema(t)).collect(), lazy=True)
        for t, f in out.items()
    }
    return {"results": results, "bronze": bronze, "silver": silver}


def raw_sessions() -> list[dict]:
    """Every session copy in the real files, read independently of the adapter."""
    base = REAL / "survey_responses"
    copies = [orjson.loads(p.read_bytes()) for p in sorted((base / "conversations").glob("*.json"))]
    copies += [
        orjson.loads(line)
        for line in (base / "conversations" / "all_conversations.jsonl").read_bytes().splitlines()
        if line.strip()
    ]
    for folder in ("completed", "exits"):
        for path in sorted((base / folder).glob("*.json")):
            copies += orjson.loads(path.read_bytes())["conversations"]
    return copies


def test_only_survey_outputs_are_discovered(real: dict) -> None:
    assert all(rel.startswith("survey_responses/") for rel in real["results"])
    assert len(real["results"]) == 4  # backend/ and conversation_data_exports/ are ignored


def test_every_real_record_lands_in_bronze_without_quarantine(real: dict) -> None:
    for rel, result in real["results"].items():
        assert result.quarantine == [], rel
        assert result.records_read == result.n_bronze, rel
    assert real["bronze"]["study_sessions"].height == len(raw_sessions())
    assert real["bronze"]["study_participants"].height == 2
    for name, model in BRONZE_MODELS.items():
        model.validate(real["bronze"][name], lazy=True)


def test_each_distinct_session_is_one_episode_with_its_whole_transcript(real: dict) -> None:
    copies = raw_sessions()
    longest = {}
    for copy in copies:
        longest[copy["session_id"]] = max(longest.get(copy["session_id"], 0), len(copy["history"]))
    episodes = real["silver"]["episodes"]
    assert sorted(episodes["native_id"]) == sorted(longest)
    assert dict(zip(episodes["native_id"], episodes["n_turns"], strict=True)) == longest
    assert real["silver"]["turns"].height == sum(longest.values())
    assert real["silver"]["quarantine"].height == 0


def test_every_iql_step_is_a_decision_tied_to_the_operator_reply_it_produced(real: dict) -> None:
    steps = {(c["session_id"], s["turn"]) for c in raw_sessions() for s in c["iql_data"]}
    decisions = real["silver"]["decisions"]
    assert decisions.height == len(steps)
    assert decisions["turn_id"].null_count() == 0
    assert all(orjson.loads(a)["response_matches_turn"] for a in decisions["attributes"])


def test_judge_stances_and_post_surveys_become_feedback(real: dict) -> None:
    feedback = real["silver"]["feedback"]
    stances = [
        s["judge"]["stance"] for c in raw_sessions() for s in c["iql_data"] if s.get("judge")
    ]
    distinct_steps = {
        (c["session_id"], s["turn"])
        for c in raw_sessions()
        for s in c["iql_data"]
        if s.get("judge")
    }
    judged = feedback.filter(pl.col("name") == "judge_stance")
    assert judged.height == len(distinct_steps)
    assert set(judged["value_text"]) == set(stances)  # UNKNOWN and DELAY kept as they are
    assert judged["attributes"].str.contains('"reasoning"').all()  # from the judge's `reason`
    assert feedback.filter(pl.col("name") == "willing").height == 6


def test_participant_comes_from_the_enclosing_file_and_pii_stays_out_of_silver(real: dict) -> None:
    episodes = real["silver"]["episodes"]
    assert episodes["group_id"].null_count() == 0
    assert episodes.filter(pl.col("source_file").str.contains("completed/"))[
        "group_id"
    ].unique().to_list() == ["d1f53e2f-24f5-4d18-800d-a8e8ac002a60"]
    for frame in real["silver"].values():
        assert "REDACTED-EMAIL" not in frame.write_json() and "Mavis" not in frame.write_json()
