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
import sys
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


# Contexts read for their history speakers at a time (estimated in-memory size): a history is cut
# out of its context as JSON text and decoded, which held a few times the contexts' size at once.
HISTORY_SLICE_BYTES = 32 * 2**20


def _history_speakers(decisions: pl.DataFrame, contexts: pl.DataFrame) -> pl.DataFrame:
    parts = max(1, -(-contexts.estimated_size() // HISTORY_SLICE_BYTES))
    rows = max(1, -(-contexts.height // parts))
    speakers = pl.concat(
        _user_speakers(part)
        for part in contexts.select("context_hash", "context").iter_slices(rows)
    )
    return (
        decisions.select("episode_id", "context_hash")
        .join(speakers, on="context_hash")
        .select("episode_id", "name")
    )


def _user_speakers(contexts: pl.DataFrame) -> pl.DataFrame:
    """(context_hash, name, role) of each user message of the contexts' histories."""
    history = pl.col("context").str.json_path_match("$.rag_context.conversationHistory")
    return (
        contexts.select("context_hash", speaker=history)
        .filter(pl.col("speaker").str.contains(r"^\[\s*\{"))
        .with_columns(pl.col("speaker").str.json_decode(_HISTORY))
        .explode("speaker")
        .unnest("speaker")
        .filter(pl.col("role") == "user")
    )


def name_pattern(names: list[str]) -> str:
    """A regex (Rust's and Python's alike) matching any of `names` as a whole word, longest first
    ("Anabel" before "Ana")."""
    alternation = "|".join(re.escape(n) for n in sorted(set(names), key=lambda n: (-len(n), n)))
    return rf"(?<![{_EDGE}])(?:{alternation})(?![{_EDGE}])"


@lru_cache(maxsize=1)
def _edge_ranges() -> str:
    """The characters of `_EDGE` as Python's `re` reads them (`\\w` is `str.isalnum()` and `_`),
    spelled as code point ranges for a Rust class: Rust's own `\\w` holds marks and connector
    punctuation and follows a newer Unicode, so it would move the word boundary."""
    every = "".join(map(chr, range(sys.maxunicode + 1)))
    runs = ((m.start(), m.end() - 1) for m in re.finditer(rf"[{_EDGE}]+", every))
    return "".join(rf"\x{{{a:x}}}-\x{{{b:x}}}" if b > a else rf"\x{{{a:x}}}" for a, b in runs)


def is_plain(name: str) -> bool:
    """Whether `name` starts and ends with a word character (`_EDGE`), as every name
    `union_rewrite` takes must ("(Bob" or "Dr." are confirmed in Python)."""
    return bool(name) and _in_word(name[0]) and _in_word(name[-1])


def union_rewrite(texts: pl.Series, names: list[str], found: bool = True) -> pl.DataFrame:
    """cleaned, hits (how many names were replaced), found (the distinct names replaced; with
    `found` only) and exact of each of `texts`, in their order: `rewrite(text, names)` done by
    Rust regex over all texts in one plan, and whether that is `rewrite(text, own)` for every
    `own` among `names` that holds every name found (`names` must be `is_plain`).

    Rust's regex has no look-arounds. A plain search of the names replaces each name it finds,
    and where none of them was glued to a word character that is `rewrite` exactly (and the same
    search with `own`'s names: a name it tries before one of `own`'s at the same place would have
    been found instead). Where one was ("Bentley", "Ben's"), a match takes the character before
    the name and the one after it (or the text's start or end) and puts them back; taking the
    one after hides it from the next match, which `rewrite` would find where one name follows
    another across at most a character ("Ben Ana"): those texts are not `exact`."""
    if not names:  # rewrite with no names changes nothing
        return pl.DataFrame(
            {"cleaned": texts, "hits": pl.repeat(0, len(texts), dtype=pl.Int64, eager=True)}
        ).with_columns(
            *([pl.lit([], pl.List(pl.String)).alias("found")] if found else []),
            exact=pl.lit(True),
        )
    order = sorted(set(names), key=lambda n: (-len(n), n))
    alternation = "(?:" + "|".join(pl.escape_regex(n) for n in order) + ")"
    outside = f"[^{_edge_ranges()}]"
    bounded = f"(^|{outside}){alternation}({outside}|$)"
    value, cleaned = pl.col("value"), pl.col("cleaned")
    plain = (
        texts.rename("value")
        .to_frame()
        .with_row_index("row")
        .with_columns(cleaned=value.str.replace_all(alternation, PLACEHOLDER))
    )
    # A name found glued shows as a placeholder next to a character that may be a word
    # character (any but ASCII's others: a superset); two names found back to back as "][".
    # Two searches of one literal each: an alternation starting with a class is 5x slower.
    near = r"[^\x00-\x26\x28-\x2c\x2e\x2f\x3a-\x40\x5b-\x5e\x60\x7b-\x7f]"
    placeholder = pl.escape_regex(PLACEHOLDER)
    plain = plain.with_columns(
        glued=cleaned.str.contains(f"{placeholder}{near}")
        | cleaned.str.contains(f"{near}{placeholder}")
        | cleaned.str.contains("]" + PLACEHOLDER, literal=True)
    )  # a column, searched once for both filters
    glued = pl.col("glued")
    # a bounded match is one name with at most a character on either side, outside its ends
    unbound = pl.element().str.replace(f"^{outside}", "").str.replace(f"{outside}$", "")
    parts = [
        plain.filter(~glued).select(
            "row", "cleaned", exact=pl.lit(True), **_matches(value, alternation, found)
        ),
        plain.filter(glued).select(
            "row",
            cleaned=value.str.replace_all(bounded, f"${{1}}{PLACEHOLDER}${{2}}"),
            exact=~value.str.contains(f"{alternation}{outside}?{alternation}"),
            **_matches(value, bounded, found, unbound),
        ),
    ]
    out = pl.concat(parts).sort("row")
    if found:
        out = out.with_columns(
            hits=pl.col("found").list.len().cast(pl.Int64), found=pl.col("found").list.unique()
        )
    return out.select("cleaned", "hits", *(["found"] if found else []), "exact")


def _matches(
    value: pl.Expr, pattern: str, found: bool, name: pl.Expr | None = None
) -> dict[str, pl.Expr]:
    """The matches of `pattern` in `value`: as a list of names (`name` of each) with `found`,
    else how many."""
    if found:
        matches = value.str.extract_all(pattern)
        return {"found": matches if name is None else matches.list.eval(name)}
    return {"hits": value.str.count_matches(pattern).cast(pl.Int64)}


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
