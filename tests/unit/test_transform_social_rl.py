"""social_rl bronze → silver on tiny hand-built frames."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

import orjson
import polars as pl
import pytest

from pipelines.config.settings import Settings
from pipelines.schemas import conform, frame_from_rows, polars_schema, silver_schema
from pipelines.schemas.bronze.social_rl import BRONZE_MODELS
from pipelines.schemas.silver import SILVER_MODELS
from pipelines.transforms.social_rl import to_silver

T0 = datetime(2025, 11, 23, 18, 0, tzinfo=UTC)


def message(agent: str, text: str, second: int, internal: bool = False) -> dict:
    return {
        "agent_id": agent,
        "content": text,
        "round_number": 1,
        "turn_number": second,
        "ts": T0.replace(second=second),
        "internal": internal,
    }


def vector(agent: str, engagement: float, alignment: float, contribution: float) -> dict:
    return {
        "agent_id": agent,
        "engagement": engagement,
        "theoretical_alignment": alignment,
        "contribution_value": contribution,
        "concepts_embodied": [],
    }


def round_row(
    run_dir: str, n: int, messages: list, feedback: list, adaptations=(), meta=None, file=None
) -> dict:
    return {
        "file": file or f"outputs/{run_dir}/round{n}_social_rl.json",
        "locator": "file",
        "run_dir": run_dir,
        "round_number": n,
        "messages": messages,
        "feedback": feedback,
        "policy_adaptations": list(adaptations),
        "synthesis": "",
        "duration_seconds": 1.5,
        "meta": None if meta is None else orjson.dumps(meta).decode(),
    }


def bronze(
    rounds: list[dict], meta: list[dict] = (), states: list[dict] = ()
) -> dict[str, pl.LazyFrame]:
    def frame(table, rows):
        return frame_from_rows(rows, polars_schema(BRONZE_MODELS[table])).lazy()

    return {
        "social_rl_rounds": frame("social_rl_rounds", rounds),
        "social_rl_meta": frame("social_rl_meta", meta),
        "social_rl_prar_states": frame("social_rl_prar_states", states),
    }


def silver(tables: dict[str, pl.LazyFrame]) -> dict[str, pl.DataFrame]:
    out = to_silver(tables, Settings())
    return {
        t: SILVER_MODELS[t].validate(conform(f, silver_schema(t)).collect(), lazy=True)
        for t, f in out.items()
    }


@pytest.fixture(scope="module")
def result() -> dict[str, pl.DataFrame]:
    factory = [
        round_row(
            "run_a",
            1,
            [message("Worker+Alice", "We need a say.", 1), message("Owner+Marta", "No.", 2)],
            [
                vector("Worker+Alice", 1.0, 0.0, 0.19999999999999998),
                vector("Owner+Marta", 0.8, 0.7, 0.2),
            ],
        ),
        round_row(
            "run_a",
            2,
            [message("Worker+Alice", "Again, a say.", 30)],
            [vector("Worker+Alice", 1.0, 0.0, 0.2)],
            [
                {
                    "agent_id": "Worker+Alice",
                    "role": "Worker",
                    "engagement_delta": 0.0,
                    "alignment_delta": 0.0,
                    "contribution_delta": 0.03999999999999998,
                    "round_number": 2,
                }
            ],
        ),
    ]
    town_hall = round_row(
        "run_b",
        1,
        [
            message("CES_Urban", "Buses first.", 1),
            message("Coach", "Stay in character.", 2, internal=True),
        ],
        [vector("CES_Urban", 0.9, 0.6, 0.5)],
        [
            {
                "agent_id": "CES_Urban",
                "role": "Progressive",
                "adaptation_type": "activate_cue",
                "cue": "civic",
            }
        ],
        meta={"experiment_id": "ces_pilot", "model": "mock"},
    )
    no_meta = round_row("run_c", 1, [], [])
    duplicate = round_row(
        "run_c",
        1,
        [message("Worker+Dana", "copy", 1)],
        [],
        file="outputs/run_c/round01_social_rl.json",
    )
    meta = [
        {
            "file": "outputs/run_a/meta.json",
            "locator": "file",
            "run_dir": "run_a",
            "experiment_id": "factory",
            "social_rl_version": "0.2.0",
            "prar_state_file": "prar/outputs/prar_x/state.json",
        }
    ]
    states = [
        {
            "file": "prar/outputs/prar_x/state.json",
            "locator": "file",
            "run_name": "prar_x",
            "current_step": "3.3",
            "state": "{}",
        }
    ]
    return silver(bronze([*factory, town_hall, no_meta, duplicate], meta, states))


def attrs(frame: pl.DataFrame, episode_id: str) -> dict:
    return orjson.loads(frame.filter(pl.col("episode_id") == episode_id)["attributes"][0])


def test_one_episode_per_run_round_with_group_from_meta(result):
    episodes = {r["episode_id"]: r for r in result["episodes"].iter_rows(named=True)}
    assert sorted(episodes) == [
        "social_rl:run_a/round1",
        "social_rl:run_a/round2",
        "social_rl:run_b/round1",
        "social_rl:run_c/round1",
    ]
    assert episodes["social_rl:run_a/round1"]["native_id"] == "run_a/round1"
    assert {e["group_id"] for e in episodes.values()} == {
        "experiment:factory",
        "experiment:ces_pilot",
        "run:run_c",
    }
    assert episodes["social_rl:run_a/round1"]["n_turns"] == 2
    assert episodes["social_rl:run_a/round1"]["ended_at"] == T0.replace(second=2)


def test_missing_version_is_recorded_as_pre_0_2_0_and_prar_state_is_linked(result):
    assert attrs(result["episodes"], "social_rl:run_b/round1")["social_rl_version"] == "pre-0.2.0"
    factory = attrs(result["episodes"], "social_rl:run_a/round2")
    assert factory["social_rl_version"] == "0.2.0"
    assert (factory["prar_run"], factory["prar_current_step"]) == ("prar_x", "3.3")
    assert attrs(result["episodes"], "social_rl:run_b/round1")["meta_source"] == "inline"


def test_turns_keep_order_roles_and_internal_flag(result):
    turns = result["turns"].filter(pl.col("episode_id").str.starts_with("social_rl:run_"))
    run_a = turns.filter(pl.col("episode_id") == "social_rl:run_a/round1")
    assert run_a["turn_id"].to_list() == ["social_rl:run_a/round1#0", "social_rl:run_a/round1#1"]
    assert run_a["native_role"].to_list() == ["Worker", "Owner"]
    assert set(turns["role"]) == {"agent"}
    run_b = turns.filter(pl.col("episode_id") == "social_rl:run_b/round1")
    assert run_b["native_role"].to_list() == [
        "Progressive",
        None,
    ]  # from adaptations; coach has none
    assert run_b["internal"].to_list() == [False, True]


def test_agent_rounds_round_float_noise_and_carry_reported_deltas(result):
    rounds = {
        (r["episode_id"], r["agent_id"]): r for r in result["agent_rounds"].iter_rows(named=True)
    }
    assert len(rounds) == 4
    alice1 = rounds[("social_rl:run_a/round1", "Worker+Alice")]
    assert alice1["contribution_value"] == 0.2 and alice1["role"] == "Worker"
    alice2 = rounds[("social_rl:run_a/round2", "Worker+Alice")]
    assert alice2["reported_contribution_delta"] == 0.04 and alice2["round_number"] == 2
    assert rounds[("social_rl:run_b/round1", "CES_Urban")]["role"] == "Progressive"


def test_feedback_has_three_system_signals_per_agent_round(result):
    feedback = result["feedback"]
    assert feedback.height == 12
    assert set(feedback["name"]) == {"engagement", "theoretical_alignment", "contribution_value"}
    assert set(feedback["target"]) == {"agent_round"} and set(feedback["source_kind"]) == {"system"}
    assert set(feedback["scale"]) == {"[0,1]"}
    assert feedback["feedback_id"].n_unique() == 12


def test_feedback_ids_are_deterministic(result):
    again = silver(
        bronze(
            [
                round_row(
                    "run_a",
                    1,
                    [message("Worker+Alice", "We need a say.", 1)],
                    [vector("Worker+Alice", 1.0, 0.0, 0.19999999999999998)],
                )
            ]
        )
    )
    same = result["feedback"].filter(
        pl.col("episode_id") == "social_rl:run_a/round1", pl.col("agent_id") == "Worker+Alice"
    )
    assert sorted(again["feedback"]["feedback_id"]) == sorted(same["feedback_id"])


def test_duplicate_round_file_is_quarantined_at_silver(result):
    quarantine = result["quarantine"]
    # "round01" sorts before "round1": the first path is kept, the other one is flagged.
    assert quarantine["file"].to_list() == ["outputs/run_c/round1_social_rl.json"]
    assert quarantine["error_kind"].to_list() == ["duplicate_conflict"]
    assert quarantine["stage"].to_list() == ["silver"]


def test_empty_bronze_gives_empty_valid_tables():
    out = silver(bronze([]))
    assert all(frame.height == 0 for frame in out.values())


def bronze_from_raw(root) -> dict[str, pl.LazyFrame]:
    from pipelines.sources import social_rl

    parts: dict[str, list[pl.DataFrame]] = {}
    for file in social_rl.discover(root):
        result = social_rl.parse_file(file, file.path.read_bytes(), Settings())
        assert result.quarantine == [], result.quarantine
        for table, frame in result.tables.items():
            parts.setdefault(table, []).append(frame)
    return {table: pl.concat(frames).lazy() for table, frames in parts.items()}


def test_clean_fixtures_resolve_groups_per_run_and_versions():
    from pathlib import Path

    out = silver(bronze_from_raw(Path(__file__).resolve().parents[1] / "fixtures" / "clean"))
    groups = dict(zip(out["episodes"]["native_id"], out["episodes"]["group_id"], strict=True))
    assert (
        groups["social_rl_2025-11-23_180822/round2"] == "experiment:factory_2rounds"
    )  # meta.json, not folder
    assert groups["ces_urban_run/round1"] == "experiment:ces_pilot"  # inline meta
    assert groups["run_without_meta/round1"] == "run:run_without_meta"
    assert (
        attrs(out["episodes"], "social_rl:social_rl_2025-11-20_101500/round1")["social_rl_version"]
        == "pre-0.2.0"
    )
    assert out["quarantine"].height == 0


def test_real_samples_reach_silver_with_nothing_lost():
    from pathlib import Path

    real = (
        Path(__file__).resolve().parents[2].parent
        / "shared"
        / "real_samples"
        / "social_rl"
        / "Socratic-RCM"
    )
    if not real.is_dir():
        pytest.skip("real samples not available")
    out = silver(bronze_from_raw(real))
    assert out["episodes"]["native_id"].to_list() == [
        "social_rl_2025-11-23_180822/round1",
        "social_rl_2025-11-23_180822/round2",
    ]
    assert set(out["episodes"]["group_id"]) == {"experiment:robust_test_2rounds_prar"}
    assert out["turns"].height == 18 and out["agent_rounds"].height == 6
    assert out["feedback"].height == 18 and out["quarantine"].height == 0
    marta = out["agent_rounds"].filter(
        pl.col("agent_id") == "Owner+Marta", pl.col("round_number") == 2
    )
    assert marta["reported_contribution_delta"].to_list() == [0.04]  # 0.03999999999999998 rounded


def test_adaptation_context_hash_is_sha256_of_the_context_text(result):
    contexts = dict(result["contexts"].select("context_hash", "context").iter_rows())
    hashes = result["decisions"]["context_hash"].drop_nulls().to_list()
    assert hashes
    for context_hash in hashes:
        assert context_hash == hashlib.sha256(contexts[context_hash].encode()).hexdigest()


def test_agent_round_feedback_id_is_the_hash_of_the_compact_json_of_its_signal(result):
    # the score is rounded (0.19999999999999998 → 0.2) before it is hashed
    feedback = result["feedback"].filter(
        pl.col("episode_id") == "social_rl:run_a/round1",
        pl.col("agent_id") == "Worker+Alice",
        pl.col("name") == "contribution_value",
    )
    text = '["social_rl:run_a/round1","agent_round","Worker+Alice","contribution_value",0.2]'
    assert feedback["feedback_id"].to_list() == [hashlib.sha256(text.encode()).hexdigest()[:20]]
