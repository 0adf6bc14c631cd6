"""Names an episode already knows (agents, users, characters, history speakers) are redacted in
that episode's texts, and only there (pipelines/privacy/known_names.py)."""

from __future__ import annotations

import json
import re

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.privacy.known_name_redaction import redact_known_names
from pipelines.privacy.known_names import PLACEHOLDER, known_names, name_pattern, rewrite
from pipelines.privacy.redact import RedactionConfig
from pipelines.release.privatize.privatize import privatize

MESSAGES = pl.List(pl.Struct({"role": pl.String, "content": pl.String}))


def _silver() -> dict[str, pl.DataFrame]:
    context = {
        "rag_context": {
            "conversationHistory": [
                {"content": "hi", "name": "Marcus", "role": "user"},
                {"content": "hello", "name": "Helper AI", "role": "assistant"},
            ]
        }
    }
    return {
        "turns": pl.DataFrame(
            {
                "episode_id": ["rl", "rl", "rl", "chat", "chat"],
                "actor_id": ["Worker+Ben", "Owner+Marta", "Worker+Will", "user-priya", None],
            }
        ),
        "episodes": pl.DataFrame(
            {
                "episode_id": ["study", "chat"],
                "attributes": ['{"character":"niki","turn_count":4}', '{"copies":1}'],
            }
        ),
        "decisions": pl.DataFrame(
            {"episode_id": ["dec"], "actor_id": ["user-ana"], "context_hash": ["h1"]}
        ),
        "contexts": pl.DataFrame({"context_hash": ["h1"], "context": [json.dumps(context)]}),
    }


def test_known_names_come_from_agents_users_deciders_characters_and_history_speakers():
    names = known_names(_silver())
    # Will is an ordinary word (not_names.txt), Helper AI an assistant persona, `None` no actor.
    assert names.rows() == [
        ("chat", "Priya"),
        ("dec", "Ana"),
        ("dec", "Marcus"),
        ("rl", "Ben"),
        ("rl", "Marta"),
        ("study", "Niki"),
    ]


def test_a_known_name_is_redacted_in_its_own_episode_only_as_a_whole_word():
    names = pl.DataFrame({"episode_id": ["rl", "rl"], "name": ["Ben", "Marta"]})
    frame = pl.DataFrame(
        {
            "episode_id": ["rl", "other", "rl"],
            "messages": [
                [{"role": "user", "content": "Ben, can Marta see Bentley's note? ben."}],
                [{"role": "user", "content": "Ben, can Marta see Bentley's note? ben."}],
                [],
            ],
            "prompt": ["Ask Ben", "Ask Ben", None],
        },
        schema={"episode_id": pl.String, "messages": MESSAGES, "prompt": pl.String},
    )
    out, hits = redact_known_names(frame, ["messages", "prompt"], frame["episode_id"], names)
    assert out.to_dicts() == [
        {
            "episode_id": "rl",
            "messages": [
                {"role": "user", "content": "[PERSON], can [PERSON] see Bentley's note? ben."}
            ],
            "prompt": "Ask [PERSON]",
        },
        {
            "episode_id": "other",
            "messages": [{"role": "user", "content": "Ben, can Marta see Bentley's note? ben."}],
            "prompt": "Ask Ben",
        },
        {"episode_id": "rl", "messages": [], "prompt": None},
    ]
    assert hits == 3


def test_a_name_that_is_an_ordinary_word_outside_its_episode_stays():
    names = pl.DataFrame({"episode_id": ["e1"], "name": ["Hope"]})
    frame = pl.DataFrame(
        {"episode_id": ["e1", "e2", "e2"], "text": ["Hope so.", "Hope so.", "Hope it helps."]}
    )
    out, hits = redact_known_names(frame, ["text"], frame["episode_id"], names)
    assert out.get_column("text").to_list() == ["[PERSON] so.", "Hope so.", "Hope it helps."]
    assert hits == 1


def test_privatize_counts_known_names_and_the_kind_can_be_switched_off():
    frame = pl.DataFrame(
        {
            "episode_id": ["rl", "rl", "chat"],
            "actor_id": ["Worker+Ben", "Worker+Ben", "user-priya"],
            "observation": ["Ben proposes a deal", "Ben proposes a deal", "Priya asks Ben"],
        }
    )
    silver = _silver()
    on = privatize({"rl_steps": frame}, silver, b"k" * 32, RedactionConfig(), ids=[])
    assert on.datasets["rl_steps"].to_dicts() == [
        # the actor id is an id, not text: kept as it is
        {"episode_id": "rl", "actor_id": "Worker+Ben", "observation": "[PERSON] proposes a deal"},
        {"episode_id": "rl", "actor_id": "Worker+Ben", "observation": "[PERSON] proposes a deal"},
        {"episode_id": "chat", "actor_id": "user-priya", "observation": "[PERSON] asks Ben"},
    ]
    assert on.ledger["rl_steps"]["known_name"] == 3
    kinds = RedactionConfig().kinds - {"known_name"}
    off = privatize({"rl_steps": frame}, silver, b"k" * 32, RedactionConfig(kinds=kinds), ids=[])
    assert off.datasets["rl_steps"].equals(frame)
    assert "known_name" not in off.ledger["rl_steps"]


def test_a_name_inside_another_episodes_longer_name_is_found_and_rows_without_episode_kept():
    names = pl.DataFrame({"episode_id": ["e1", "e2"], "name": ["Ann", "Mary Ann"]})
    frame = pl.DataFrame(
        {"episode_id": ["e1", "e2", None], "text": ["Mary Ann said", "Mary Ann said", "Ann said"]}
    )
    out, hits = redact_known_names(frame, ["text"], frame["episode_id"], names)
    assert out.rows() == [
        ("e1", "Mary [PERSON] said"),
        ("e2", "[PERSON] said"),
        (None, "Ann said"),
    ]
    assert hits == 2


# Names that are prefixes, suffixes and pieces of each other, with spaces, hyphens and apostrophes;
# texts of them glued by letters, digits and other word characters Python's \w holds (é, ², ٣).
NAMES = ["Ann", "Anna", "Mary Ann", "Mary", "Jean-Luc", "Jean", "O'Neil", "Neil"]
PIECES = [*NAMES, " ", "  ", "-", "'", "’", "_", ".", ",", "x", "é", "²", "٣", "7", "[", "\n"]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.sampled_from(PIECES), max_size=14).map("".join),
    st.lists(st.sampled_from(NAMES), min_size=1, max_size=4),
)
def test_rewrite_is_the_whole_word_regex_exactly(text: str, names: list[str]) -> None:
    # the regex (look-arounds, longest name first) is the rule; rewrite confirms the candidates
    # a plain search finds
    assert rewrite(text, names) == re.compile(name_pattern(names)).subn(PLACEHOLDER, text)


def test_rewrite_tries_a_shorter_name_where_a_longer_one_runs_into_a_word() -> None:
    text = "Mary Anne met Mary Ann, JoAnn and Ann-Marie; Ann Ann"
    assert rewrite(text, ["Ann", "Mary", "Mary Ann"]) == (
        "[PERSON] Anne met [PERSON], JoAnn and Ann-Marie; [PERSON] [PERSON]",
        4,
    )
