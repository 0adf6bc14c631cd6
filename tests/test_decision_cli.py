"""`turnlake decision list|inspect` end to end on the shared demo build (`demo_warehouse`)."""

import glob

import orjson
import polars as pl
import pytest

from pipelines.cli.main import main
from pipelines.storage.layout import Layout


def _run(capsys, *args: str) -> tuple[int, str]:
    code = main(list(args))
    return code, capsys.readouterr().out


def _released_prompts(data_root) -> pl.DataFrame:
    exports = Layout(data_root).exports
    version = (exports / "LATEST").read_text().strip()
    files = glob.glob(str(exports / version / "decisions" / "*.parquet"))
    return pl.read_parquet(files).select("decision_id", "prompt")


def test_every_listed_decision_carries_the_prompt_the_release_holds(demo_warehouse):
    import turnlake

    listed = turnlake.list_decisions(data_root=demo_warehouse)
    released = _released_prompts(demo_warehouse)
    assert released.height > 0
    joined = released.join(
        listed.select("decision_id", pl.col("prompt").alias("ours")), on="decision_id", how="left"
    )
    assert joined.filter(pl.col("ours").is_null()).height == 0
    assert joined["prompt"].to_list() == joined["ours"].to_list()


def test_inspect_json_messages_equal_the_released_prompt(demo_warehouse, capsys):
    released = _released_prompts(demo_warehouse)
    # a decision with history and a system prompt, so the comparison is not trivially empty
    row = released.filter(pl.col("prompt").list.len() >= 2).row(0, named=True)
    code, out = _run(
        capsys,
        "decision",
        "inspect",
        row["decision_id"],
        "--json",
        "--data-root",
        str(demo_warehouse),
    )
    assert code == 0
    view = orjson.loads(out)
    assert view["messages"] == row["prompt"]
    assert view["decision_id"] == row["decision_id"]
    # inspect shows silver's system prompt; the release holds it with the decider's own name
    # redacted (a name the episode knows: pipelines/privacy/known_names.py)
    own_name = view["actor"]["name"]
    assert own_name and own_name in view["system_prompt"]
    released_system = view["system_prompt"].replace(own_name, "[PERSON]")
    assert released_system in view["messages"][0]["content"]


def test_inspect_text_shows_the_sections_and_every_feedback_row(demo_warehouse, capsys):
    import turnlake

    rated = turnlake.list_decisions(turnlake.DecisionFilter(rated=True), data_root=demo_warehouse)
    decision_id = rated["decision_id"][0]
    view = turnlake.inspect_decision(decision_id, data_root=demo_warehouse)
    code, out = _run(capsys, "decision", "inspect", decision_id, "--data-root", str(demo_warehouse))
    assert code == 0
    for section in (
        "identity / system prompt:",
        "ambient state:",
        "coordination snapshot:",
        "companion suggestion:",
        "outcome:",
        "messages (the prompt as released):",
    ):
        assert section in out
    assert f"feedback ({len(view['feedback'])} rows" in out
    assert len(view["feedback"]) >= 1


def test_list_filters_by_actor_type_and_rated_and_prints_json_lines(demo_warehouse, capsys):
    code, out = _run(
        capsys,
        "decision",
        "list",
        "--actor-type",
        "human",
        "--unrated",
        "--json",
        "--data-root",
        str(demo_warehouse),
    )
    assert code == 0
    rows = [orjson.loads(line) for line in out.splitlines()]
    assert rows, "the demo has unrated human decisions"
    assert all(r["actor_type"] == "human" and r["n_ratings"] == 0 for r in rows)


def test_list_time_range_is_half_open(demo_warehouse, capsys):
    import turnlake

    every = turnlake.list_decisions(data_root=demo_warehouse).drop_nulls("ts")
    first, second = every["ts"][0], every["ts"][1]
    code, out = _run(
        capsys,
        "decision",
        "list",
        "--since",
        first.isoformat(),
        "--until",
        second.isoformat(),
        "--json",
        "--data-root",
        str(demo_warehouse),
    )
    assert code == 0
    expected = every.filter((pl.col("ts") >= first) & (pl.col("ts") < second)).height
    assert len(out.splitlines()) == expected >= 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["decision", "inspect", "no-such-decision"], "no decision 'no-such-decision'"),
        (["decision", "list", "--since", "yesterday"], "not an ISO 8601 date"),
    ],
)
def test_unknown_decision_and_bad_time_exit_two(demo_warehouse, capsys, args, message):
    code = main([*args, "--data-root", str(demo_warehouse)])
    captured = capsys.readouterr()
    assert code == 2
    assert message in captured.err


def test_decision_commands_before_any_build_exit_two(tmp_path, capsys):
    code = main(["decision", "list", "--data-root", str(tmp_path / "data")])
    assert code == 2
    assert "turnlake build" in capsys.readouterr().err


def test_replay_swaps_only_the_identity_of_the_released_prompt(demo_warehouse, tmp_path, capsys):
    import turnlake

    persona = tmp_path / "critic.toml"
    persona.write_text('name = "Terse Critic"\nsystem_prompt = "You are Terse Critic."\n')
    out_dir = tmp_path / "replays"
    code, out = _run(
        capsys,
        "decision",
        "replay",
        "--actor-type",
        "ai",
        "--persona",
        str(persona),
        "--to",
        str(out_dir),
        "--model",
        "m-1",
        "--data-root",
        str(demo_warehouse),
    )
    assert code == 0
    requests = [
        orjson.loads(line)
        for line in (out_dir / "Terse-Critic.batch.jsonl").read_bytes().splitlines()
    ]
    table = pl.read_parquet(out_dir / "Terse-Critic.parquet")
    ai = turnlake.list_decisions(turnlake.DecisionFilter(actor_type="ai"), data_root=demo_warehouse)
    assert sorted(r["custom_id"] for r in requests) == sorted(ai["decision_id"].to_list())
    assert table.height == len(requests) == ai.height
    assert {(r["method"], r["url"], r["body"]["model"]) for r in requests} == {
        ("POST", "/v1/chat/completions", "m-1")
    }
    assert f"{ai.height} decisions" in out
    released = dict(_released_prompts(demo_warehouse).iter_rows())
    own_prompts = dict(
        ai.select(
            "decision_id",
            pl.col("context").str.json_path_match("$.rag_context.identity.systemPrompt"),
        ).iter_rows()
    )
    checked = 0
    for request in requests:
        original, own = released[request["custom_id"]], own_prompts[request["custom_id"]]
        if not own:
            continue
        expected = [dict(m) for m in original]
        expected[0]["content"] = original[0]["content"].replace(own, "You are Terse Critic.", 1)
        assert request["body"]["messages"] == expected
        checked += 1
    assert checked >= 5


def test_replay_with_a_persona_file_without_a_prompt_exits_two(demo_warehouse, tmp_path, capsys):
    persona = tmp_path / "empty.json"
    persona.write_text("{}")
    code = main(
        [
            "decision",
            "replay",
            "--persona",
            str(persona),
            "--to",
            str(tmp_path / "o"),
            "--data-root",
            str(demo_warehouse),
        ]
    )
    assert code == 2
    assert "system_prompt" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_demo_ratings_over_time_show_in_inspect_with_the_superseded_history(demo_warehouse):
    import turnlake

    feedback = turnlake.query(
        "SELECT decision_id, name, value_num, scale FROM feedback "
        "WHERE name IN ('rating', 'rating_superseded') AND attributes LIKE '%event_id%'",
        data_root=demo_warehouse,
    )
    # the demo rates one decision 2 (user), 4 (community), 5 (user): the user's 2 is superseded
    first = feedback.filter(pl.col("value_num") == 2.0)["decision_id"][0]
    view = turnlake.inspect_decision(first, data_root=demo_warehouse)
    history = [
        (f["name"], f["value_num"]) for f in view["feedback"] if f["name"].startswith("rating")
    ]
    assert history[-3:] == [("rating_superseded", 2.0), ("rating", 4.0), ("rating", 5.0)]
    quarantined = turnlake.query(
        "SELECT error_kind FROM quarantine WHERE file = 'ratings/ratings.jsonl' ORDER BY 1",
        data_root=demo_warehouse,
    )
    assert quarantined["error_kind"].to_list() == ["bad_value", "orphan"]


def test_rate_appends_an_event_that_the_next_build_ingests_and_supersedes(
    demo_warehouse, tmp_path, capsys, new_dagster_home, monkeypatch
):
    import shutil

    import turnlake

    monkeypatch.setenv("DAGSTER_HOME", str(new_dagster_home()))
    data_root = tmp_path / "data"  # a copy of a demo build (`--demo-if-empty`: raw under it)
    shutil.copytree(demo_warehouse, data_root, symlinks=True)
    build = ["build", "--data-root", str(data_root), "--log-level", "WARNING"]
    unrated = turnlake.list_decisions(turnlake.DecisionFilter(rated=False), data_root=data_root)
    decision_id = unrated["decision_id"][0]
    ratings = data_root / "raw" / "ratings" / "ratings.jsonl"
    before = ratings.read_bytes()
    for rating in ("2", "5"):
        code, _ = _run(
            capsys,
            "decision",
            "rate",
            decision_id,
            "--rating",
            rating,
            "--by",
            "community",
            "--reason",
            f"gave {rating}",
            "--data-root",
            str(data_root),
        )
        assert code == 0
    after = ratings.read_bytes()
    assert after.startswith(before) and len(after.splitlines()) == len(before.splitlines()) + 2
    code, _ = _run(
        capsys, "decision", "rate", decision_id, "--rating", "6", "--data-root", str(data_root)
    )
    assert code == 2 and ratings.read_bytes() == after  # refused, nothing appended
    capsys.readouterr()
    assert main(build) == 0
    view = turnlake.inspect_decision(decision_id, data_root=data_root)
    rows = [(f["name"], f["value_num"], f["attributes"]["reason"]) for f in view["feedback"]]
    assert rows == [("rating_superseded", 2.0, "gave 2"), ("rating", 5.0, "gave 5")]
    # 5 on 1-5 → n = 1 → reward 2n − 1 = 1
    assert view["reward"]["value"] == 1.0
    listed = turnlake.list_decisions(turnlake.DecisionFilter(rated=True), data_root=data_root)
    assert decision_id in listed["decision_id"].to_list()


def test_compare_shows_each_personas_action_and_the_saved_query_agrees(demo_warehouse, capsys):
    import turnlake

    code, out = _run(capsys, "decision", "compare", "--json", "--data-root", str(demo_warehouse))
    assert code == 0
    tables = orjson.loads(out)
    # the demo: terse-critic's batch output has 8 lines, one a failed request; cautious has 5
    # results and one for a decision that does not exist
    rates = {(r["persona"], r["domain"]): r for r in tables["agreement"]}
    assert {k: r["replayed"] for k, r in rates.items()} == {
        ("cautious", "chat"): 5,
        ("terse-critic", "chat"): 7,
    }
    for row in tables["decisions"]:
        assert set(row) == {"decision_id", "domain", "original_action", "cautious", "terse-critic"}
    # cautious always answers SILENT: it agrees exactly where the original action was SILENT
    silent = sum(
        1 for r in tables["decisions"] if r["cautious"] and r["original_action"] == "SILENT"
    )
    assert rates[("cautious", "chat")]["agreeing"] == silent
    saved = turnlake.query(
        turnlake.saved_queries()["replay_agreement"].sql, data_root=demo_warehouse
    )
    assert saved.to_dicts() == tables["agreement"]
    both = next(r for r in tables["decisions"] if r["cautious"] and r["terse-critic"])
    view = turnlake.inspect_decision(both["decision_id"], data_root=demo_warehouse)
    assert [(r["persona"], r["action"]) for r in view["replays"]] == [
        ("cautious", both["cautious"]),
        ("terse-critic", both["terse-critic"]),
    ]
    quarantined = turnlake.query(
        "SELECT error_kind FROM quarantine WHERE file LIKE 'replays/%' ORDER BY 1",
        data_root=demo_warehouse,
    )
    assert quarantined["error_kind"].to_list() == ["bad_value", "orphan"]
