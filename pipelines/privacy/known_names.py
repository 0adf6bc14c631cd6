"""Names the sources already know (`known_name`), redacted in the texts of the episode that knows
them: Social RL agents (`Worker+Ben` → "Ben"), dialogue and decision users (`user-ana` → "Ana")
as turn or decision actors,
a study episode's roleplay character (`attributes.character`), and the human speakers named in a
decision context's history (`rag_context.conversationHistory[].name`, role user).

Simulated agents' persona names count as personal data: a persona is written to read as a person
(and is often modelled on one), and a released text that names it ties the row to the actor.
Assistant personas in a context's history ("Helper AI") name a product, not a person: left alone.

A name is matched as a whole word, case as written ("Ben", not "ben" or "Bentley"), and only in its
own episode: "Will" is redacted in the episode whose agent is Will, nowhere else. Names shorter
than MIN_CHARS and the words of not_names.txt ("May", "Will", "Mark" read as ordinary words in a
sentence's first place) are never taken as known.

The redaction of a release partition's datasets is pipelines/release/privatize/known_names.py.
"""

from __future__ import annotations

import re
from functools import lru_cache

import polars as pl

from pipelines.privacy.person_names import NOT_NAMES

PLACEHOLDER = "[PERSON]"
MIN_CHARS = 3  # "Al", "Bo", "Jo" match too many words and initials to be worth their recall
NAMES_SCHEMA = pl.Schema({"episode_id": pl.String, "name": pl.String})
_EDGE = r"\w'’\-"  # a name inside "O'Neill", "Jean-Luc" or "Benson" is no whole word

_AGENT = r"^[A-Za-z][\w\-]*\+(\w[\w'’\- ]*)$"  # Role+Name
_USER = r"^user-([a-z][a-z'\-]*)$"
# A context's history: a list of messages. Contexts vary in shape (a `rag_context` that is a plain
# string, a history of strings): only a list of objects is read, the rest knows no speaker.
_HISTORY = pl.List(pl.Struct({"name": pl.String, "role": pl.String}))


def known_names(silver: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """(episode_id, name) of every name an episode's silver rows know (`turns`, `episodes`,
    `decisions` with their `contexts`; absent tables are skipped), unique and sorted."""
    found = [pl.DataFrame(schema=NAMES_SCHEMA)]
    actor = pl.col("actor_id")
    for table in ("turns", "decisions"):  # who spoke, who decided
        frame = silver.get(table)
        if frame is not None and frame.height:
            name = pl.coalesce(actor.str.extract(_AGENT, 1), _title(actor.str.extract(_USER, 1)))
            found.append(frame.select("episode_id", name=name))
    episodes = silver.get("episodes")
    if episodes is not None and episodes.height:
        character = pl.col("attributes").str.json_path_match("$.character")
        found.append(episodes.select("episode_id", name=_title(character)))
    decisions, contexts = silver.get("decisions"), silver.get("contexts")
    if decisions is not None and contexts is not None and decisions.height and contexts.height:
        found.append(_history_speakers(decisions, contexts))
    names = pl.concat(found, how="vertical_relaxed").with_columns(pl.col("name").str.strip_chars())
    return (
        names.filter(
            pl.col("name").str.len_chars() >= MIN_CHARS,
            ~pl.col("name").is_in(sorted(NOT_NAMES)),
        )
        .unique()
        .sort("episode_id", "name")
    )


def _title(expr: pl.Expr) -> pl.Expr:
    """ "ana" → "Ana": ids write a name in lower case, texts with its capital."""
    return expr.str.slice(0, 1).str.to_uppercase() + expr.str.slice(1)


def _history_speakers(decisions: pl.DataFrame, contexts: pl.DataFrame) -> pl.DataFrame:
    history = pl.col("context").str.json_path_match("$.rag_context.conversationHistory")
    speakers = (
        contexts.select("context_hash", speaker=history)
        .filter(pl.col("speaker").str.contains(r"^\[\s*\{"))
        .with_columns(pl.col("speaker").str.json_decode(_HISTORY))
        .explode("speaker")
        .unnest("speaker")
        .filter(pl.col("role") == "user")
    )
    return (
        decisions.select("episode_id", "context_hash")
        .join(speakers, on="context_hash")
        .select("episode_id", "name")
    )


def name_pattern(names: list[str]) -> str:
    """A regex (Rust's and Python's alike) matching any of `names` as a whole word, longest first
    ("Anabel" before "Ana")."""
    alternation = "|".join(re.escape(n) for n in sorted(set(names), key=lambda n: (-len(n), n)))
    return rf"(?<![{_EDGE}])(?:{alternation})(?![{_EDGE}])"


def word_pattern(names: list[str]) -> str:
    """`name_pattern` without look-arounds (Rust's regex has none), a superset: the prefilter."""
    return "(?:" + "|".join(re.escape(n) for n in sorted(set(names), key=len, reverse=True)) + ")"


def rewrite(text: str, names: list[str]) -> tuple[str, int]:
    """`text` with each of `names` as a whole word replaced by [PERSON], and how many were:
    `name_pattern`'s substitution exactly, found without its look-arounds. A plain search of the
    names (longest first, in C) finds each candidate; Python confirms only those, checking the
    characters on either side (a regex that starts with a look-behind is tried at every place of
    the text)."""
    search, order = _compiled(tuple(names))
    if not order:
        return text, 0
    pieces: list[str] = []
    kept = count = at = 0
    while (found := search.search(text, at)) is not None:
        start, end = found.span()
        at = start + 1
        if start and _in_word(text[start - 1]):
            continue  # no name starts here: the look-behind holds for all or none
        if end < len(text) and _in_word(text[end]):
            # the longest-first alternation tries the shorter names here before moving on
            end = next((start + len(n) for n in order if _whole_at(text, start, n)), -1)
            if end < 0:
                continue
        pieces += [text[kept:start], PLACEHOLDER]
        kept = at = end
        count += 1
    if not count:
        return text, 0
    return "".join([*pieces, text[kept:]]), count


def _in_word(char: str) -> bool:
    """Whether `char` is in `_EDGE` (Python's `\\w` is `str.isalnum()` and `_`)."""
    return char.isalnum() or char in "_'’-"


def _whole_at(text: str, start: int, name: str) -> bool:
    end = start + len(name)
    return text.startswith(name, start) and (end == len(text) or not _in_word(text[end]))


@lru_cache(maxsize=4096)
def _compiled(names: tuple[str, ...]) -> tuple[re.Pattern[str], tuple[str, ...]]:
    """An episode's names come back with each of its texts: their search compiled once, and the
    names in the order the alternation tries them."""
    order = tuple(sorted({n for n in names if n}, key=lambda n: (-len(n), n)))
    return re.compile("|".join(map(re.escape, order))), order
