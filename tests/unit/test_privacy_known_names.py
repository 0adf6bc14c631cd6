"""Names an episode already knows (agents, users, characters, history speakers) are redacted in
that episode's texts, and only there (pipelines/privacy/known_names.py)."""

from __future__ import annotations

import json
import re

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.privacy import known_names as known_names_module
from pipelines.privacy.known_name_redaction import redact_known_names
from pipelines.privacy.known_names import (
    PLACEHOLDER,
    known_names,
    name_pattern,
    rewrite,
    union_rewrite,
)
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


def test_history_speakers_of_contexts_read_a_slice_at_a_time_are_each_decisions_own(monkeypatch):
    def context(*speakers: str) -> str:
        history = [{"content": "hi", "name": name, "role": "user"} for name in speakers]
        return json.dumps({"rag_context": {"conversationHistory": history}})

    silver = {
        "decisions": pl.DataFrame(
            {
                "episode_id": ["d1", "d2", "d3"],
                "actor_id": ["d1-bot", "d2-bot", "d3-bot"],
                "context_hash": ["a", "b", "c"],
            }
        ),
        "contexts": pl.DataFrame(
            {
                "context_hash": ["a", "b", "c"],
                "context": [
                    context("Marcus"),
                    '{"rag_context": "no history"}',
                    context("Ida", "Rosa"),
                ],
            }
        ),
    }
    monkeypatch.setattr(known_names_module, "HISTORY_SLICE_BYTES", 1)  # one context a slice
    # by hand: d2's context holds no list of messages
    assert known_names(silver).rows() == [("d1", "Marcus"), ("d3", "Ida"), ("d3", "Rosa")]


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


def _union(text: str, names: list[str]) -> tuple[str, int, list[str], bool]:
    cleaned, hits, found, exact = union_rewrite(pl.Series([text]), names).row(0)
    return cleaned, hits, sorted(found), exact


def test_union_rewrite_takes_the_longest_name_and_only_whole_words() -> None:
    # "Mary Ann" before "Mary" where both fit; "Ann-Marie" and "Bentley" are no names
    assert _union("Mary Ann met Ann-Marie and Mary.", ["Ann", "Mary Ann", "Mary"])[:3] == (
        "[PERSON] met Ann-Marie and [PERSON].",
        2,
        ["Mary", "Mary Ann"],
    )
    assert _union("Bentley and Ben's car, Ben.", ["Ben"]) == (
        "Bentley and Ben's car, [PERSON].",
        1,
        ["Ben"],
        True,
    )


def test_union_rewrite_keeps_the_case_as_written() -> None:
    assert _union("ben BEN Ben", ["Ben"]) == ("ben BEN [PERSON]", 1, ["Ben"], True)


def test_union_rewrite_draws_word_boundaries_as_pythons_re_does() -> None:
    # Python's \w holds é, ² and ٣ (str.isalnum) but not a combining accent or ‿, which Rust's
    # \w holds: the accent and ‿ end the name, the others glue it
    text = "Zoë, Zoëlle, éZoë, Zoë\u0301, Zoë², ٣Zoë, Zoë‿x"
    assert _union(text, ["Zoë"]) == (
        "[PERSON], Zoëlle, éZoë, [PERSON]\u0301, Zoë², ٣Zoë, [PERSON]‿x",
        3,
        ["Zoë"],
        True,
    )


def test_union_rewrite_is_not_exact_where_a_name_follows_a_glued_text_s_name() -> None:
    # Rust's match of "Ben" takes the space the look-behind of "Ana" needs
    assert _union("Ben's pal Ben Ana", ["Ben", "Ana"])[3] is False
    assert _union("Ben Ana", ["Ben", "Ana"]) == ("[PERSON] [PERSON]", 2, ["Ana", "Ben"], True)


UNION_PIECES = [*PIECES, "[PERSON]", "]", "\u0301", "‿", "…", "Mary Ann Neil"]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(UNION_PIECES), max_size=14).map("".join), max_size=8),
    st.lists(st.sampled_from(NAMES), min_size=1, max_size=5),
    st.data(),
)
def test_union_rewrite_is_the_whole_word_regex_where_exact(
    texts: list[str], names: list[str], data: st.DataObject
) -> None:
    out = union_rewrite(pl.Series(texts, dtype=pl.String), names)
    for text, (cleaned, hits, found, exact) in zip(texts, out.iter_rows(), strict=True):
        if not exact:
            continue
        assert (cleaned, hits) == re.compile(name_pattern(names)).subn(PLACEHOLDER, text)
        # the same for any of the names that holds every name found
        own = sorted({*found, *data.draw(st.lists(st.sampled_from(names), min_size=1))})
        assert (cleaned, hits) == re.compile(name_pattern(own)).subn(PLACEHOLDER, text)


def test_a_text_changes_only_in_the_rows_of_an_episode_that_knows_the_name() -> None:
    # the same text in a row without an episode, and in one whose episode knows no name, stays
    names = pl.DataFrame({"episode_id": ["rl"], "name": ["Ben"]})
    for other in (None, "chat"):
        frame = pl.DataFrame(
            {"episode_id": ["rl", other], "text": ["Hi Ben", "Hi Ben"]},
            schema={"episode_id": pl.String, "text": pl.String},
        )
        out, hits = redact_known_names(frame, ["text"], frame["episode_id"], names)
        assert out.rows() == [("rl", "Hi [PERSON]"), (other, "Hi Ben")]
        assert hits == 1


def test_names_rust_cannot_place_are_confirmed_in_python() -> None:
    # "Dr." and "(Bob" end or start with no word character; "Ben Ana" after a glued "Ben's"
    names = pl.DataFrame(
        {
            "episode_id": ["e1", "e1", "e2", "e2", "e3", "e4"],
            "name": ["Dr.", "Ben", "Ben", "Ana", "Bob", "(Bob"],
        }
    )
    frame = pl.DataFrame(
        {
            "episode_id": ["e1", "e2", "e2", "e3", "e4"],
            "text": [
                "Ask Dr. Ben",
                "Ben's pal Ben Ana",
                "Ask Dr. Ben",
                "(Bob y Bobby",
                "(Bob y Bobby",
            ],
        }
    )
    out, hits = redact_known_names(frame, ["text"], frame["episode_id"], names)
    assert out.get_column("text").to_list() == [
        "Ask [PERSON] [PERSON]",
        "Ben's pal [PERSON] [PERSON]",
        "Ask Dr. [PERSON]",
        "([PERSON] y Bobby",
        "[PERSON] y Bobby",
    ]
    assert hits == 7


EPISODE_NAMES = {"e1": ["Ann", "Mary"], "e2": ["Mary Ann", "Neil"], "e3": ["O'Neil"]}


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([*EPISODE_NAMES, "e4", None]),
            st.lists(st.sampled_from(UNION_PIECES), max_size=10).map("".join),
        ),
        max_size=12,
    )
)
def test_each_row_is_its_own_episodes_whole_word_regex(rows: list) -> None:
    names = pl.DataFrame(
        [(e, n) for e, known in EPISODE_NAMES.items() for n in known],
        schema={"episode_id": pl.String, "name": pl.String},
        orient="row",
    )
    frame = pl.DataFrame(rows, schema={"episode_id": pl.String, "text": pl.String}, orient="row")
    out, hits = redact_known_names(frame, ["text"], frame["episode_id"], names)
    expected = [
        re.compile(name_pattern(EPISODE_NAMES[e])).subn(PLACEHOLDER, t)
        if e in EPISODE_NAMES
        else (t, 0)
        for e, t in rows
    ]
    assert out.get_column("text").to_list() == [text for text, _ in expected]
    assert hits == sum(n for _, n in expected)
