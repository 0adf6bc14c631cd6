"""Decision time travel, pure parts: the `list` filters and the `inspect` view, on frames built
here with expectations worked out by hand."""

from datetime import UTC, datetime

import orjson
import polars as pl

from pipelines.decisions.filters import DecisionFilter, select_decisions
from pipelines.decisions.inspect import inspect_decision

T = datetime(2025, 3, 4, 12, 0, tzinfo=UTC)

INDEX = pl.DataFrame(
    {
        "decision_id": ["d1", "d2", "d3", "d4"],
        "ts": [T.replace(hour=h) for h in (9, 10, 11, 12)],
        "session_id": ["s1", "s1", "s2", "s2"],
        "episode_id": ["decision:s1", "decision:s1", "decision:s2", "decision:s2"],
        "actor_id": ["user-ana", "persona-helper", "persona-helper", "user-joel"],
        "actor_name": ["Ana", "Helper AI", "Helper AI", "Joel"],
        "actor_type": ["human", "ai", "ai", "human"],
        "native_actor_type": ["human", "persona", "persona", "human"],
        "domain": ["chat", "chat", "code", None],
        "action": ["POSTED", "SILENT", "POSTED", "SILENT"],
        "rated": [True, False, True, False],
    }
)


def _ids(wanted: DecisionFilter) -> list[str]:
    return select_decisions(INDEX, wanted)["decision_id"].to_list()


def test_no_filter_keeps_every_decision():
    assert _ids(DecisionFilter()) == ["d1", "d2", "d3", "d4"]


def test_actor_matches_id_or_name_ignoring_case():
    assert _ids(DecisionFilter(actor="helper ai")) == ["d2", "d3"]
    assert _ids(DecisionFilter(actor="USER-JOEL")) == ["d4"]


def test_actor_type_matches_the_kind_or_the_sources_own_type():
    assert _ids(DecisionFilter(actor_type="human")) == ["d1", "d4"]
    assert _ids(DecisionFilter(actor_type="persona")) == ["d2", "d3"]


def test_session_action_domain_and_rated_filters_combine():
    assert _ids(DecisionFilter(session="s2", action="posted")) == ["d3"]
    assert _ids(DecisionFilter(domain="chat", rated=False)) == ["d2"]
    assert _ids(DecisionFilter(rated=True)) == ["d1", "d3"]
    assert _ids(DecisionFilter(session="decision:s1")) == ["d1", "d2"]


def test_time_range_includes_since_and_excludes_until():
    # 10:00 is kept by since=10:00; 12:00 is dropped by until=12:00
    wanted = DecisionFilter(since=T.replace(hour=10), until=T.replace(hour=12))
    assert _ids(wanted) == ["d2", "d3"]


CONTEXT = {
    "ambient_state": {"temperature": 0.9},
    "coordination_snapshot": {"phase": "deciding"},
    "rag_context": {
        "identity": {"systemPrompt": "You are Ana."},
        "conversationHistory": [{"role": "user", "name": "Joel", "content": "hi"}],
    },
    "visual_context": None,
}
OUTCOME = {"rating": 4, "ratedBy": "user", "wasGoodDecision": True}
ROW = {
    "decision_id": "d1",
    "session_id": "s1",
    "episode_id": "decision:s1",
    "ts": T,
    "actor_id": "user-ana",
    "actor_name": "Ana",
    "actor_type": "human",
    "native_actor_type": "human",
    "domain": "chat",
    "context_hash": "h",
    "context": orjson.dumps(CONTEXT).decode(),
    "action": "POSTED",
    "confidence": 0.8,
    "reasoning": "asked",
    "response": "hello",
    "candidates": None,
    "attributes": orjson.dumps(
        {"model_used": None, "companion_suggestion": '{"suggestedAction":"SILENT"}'}
    ).decode(),
    "suggestion_followed": False,
    "reward": 0.5,
    "reward_rule": "decision_outcome@2",
    "feedback_ids": ["f2"],
    "prompt": [{"role": "system", "content": "You are Ana."}],
}
FEEDBACK = pl.DataFrame(
    {
        "feedback_id": ["f1", "f2", "f3"],
        "decision_id": ["d1", "d1", "d9"],
        "name": ["suggestion_overridden", "rating", "rating"],
        "value_num": [1.0, 4.0, 2.0],
        "value_text": ["true", None, None],
        "scale": ["bool", "1-5", "1-5"],
        "source_kind": ["human", "human", "human"],
        "observed_at": [T.replace(hour=14), T.replace(hour=13), T],
        "attributes": [
            None,
            orjson.dumps({"outcome": orjson.dumps(OUTCOME).decode()}).decode(),
            None,
        ],
    }
)


def test_inspect_shows_every_part_of_the_context_and_feedback_oldest_first():
    view = inspect_decision(ROW, FEEDBACK)
    assert view["system_prompt"] == "You are Ana."
    assert view["conversation_history"] == [{"role": "user", "name": "Joel", "content": "hi"}]
    assert view["ambient_state"] == {"temperature": 0.9}
    assert view["coordination_snapshot"] == {"phase": "deciding"}
    assert view["companion_suggestion"] == {"suggestedAction": "SILENT"}
    assert view["outcome"] == OUTCOME
    # only d1's rows, 13:00 before 14:00
    assert [f["feedback_id"] for f in view["feedback"]] == ["f2", "f1"]
    assert view["messages"] == [{"role": "system", "content": "You are Ana."}]


def test_swap_identity_replaces_only_the_identity():
    from pipelines.decisions.persona import Persona
    from pipelines.decisions.replay import swap_identity

    persona = Persona("Critic", "You are Critic.", {"role": "reviewer"})
    swapped = orjson.loads(swap_identity(orjson.dumps(CONTEXT).decode(), persona))
    assert swapped["rag_context"]["identity"] == {
        "role": "reviewer",
        "systemPrompt": "You are Critic.",
    }
    assert (
        swapped["rag_context"]["conversationHistory"]
        == CONTEXT["rag_context"]["conversationHistory"]
    )
    assert swapped["ambient_state"] == CONTEXT["ambient_state"]
    # a decision stored without any context still gets the persona
    assert orjson.loads(swap_identity(None, persona)) == {
        "rag_context": {"identity": {"role": "reviewer", "systemPrompt": "You are Critic."}}
    }


def test_persona_files_toml_json_and_text(tmp_path):
    import pytest

    from pipelines.decisions.persona import BadPersona, read_persona

    (tmp_path / "a.toml").write_text('name = "A b"\nsystem_prompt = " Be A. "\nrole = "x"\n')
    (tmp_path / "b.json").write_text('{"system_prompt": "Be B."}')
    (tmp_path / "c.txt").write_text("Be C.\n")
    (tmp_path / "d.json").write_text('{"name": "D"}')
    a = read_persona(tmp_path / "a.toml")
    assert (a.name, a.system_prompt, a.identity_fields, a.slug) == (
        "A b",
        "Be A.",
        {"role": "x"},
        "A-b",
    )
    assert (
        read_persona(tmp_path / "b.json").name,
        read_persona(tmp_path / "b.json").system_prompt,
    ) == ("b", "Be B.")
    assert read_persona(tmp_path / "c.txt").system_prompt == "Be C."
    with pytest.raises(BadPersona, match="system_prompt"):
        read_persona(tmp_path / "d.json")
