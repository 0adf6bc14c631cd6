"""Known names (known_names.py) redacted in a frame's texts, each in the rows of the episode that
knows it: found in Polars (one Rust regex of the frame's names over its distinct texts, joined with
each text's episodes); Python rewrites only the (episode, text) pairs that hold a name of their own
episode, and the rewrites are put back by joining each string leaf on its (episode, text): one
plan per column, whatever the number of episodes.

One code path for every reader that shows released text: the release's privatize step
(pipelines/release/privatize/privatize.py) and the decision tools (pipelines/decisions/), which show
"the prompt the release holds" and so must redact it exactly as the release does.
"""

from __future__ import annotations

from collections.abc import Collection

import polars as pl

from pipelines.privacy.known_names import (
    NAMES_SCHEMA,
    is_plain,
    rewrite,
    union_rewrite,
    word_pattern,
)
from pipelines.privacy.text_leaves import (
    put_rows,
    replace_keyed_strings,
    replace_strings,
    tagged_leaves,
)

KIND = "known_name"  # its switch in `[privacy.redaction] kinds` and its ledger count


def names_to_redact(names: pl.DataFrame | None, kinds: Collection[str]) -> pl.DataFrame:
    """`names` (episode_id, name) when the kind `known_name` is switched on, else none: the one
    reading of the switch, so a reader never redacts what the release left."""
    if names is None or KIND not in kinds:
        return pl.DataFrame(schema=NAMES_SCHEMA)
    return names


def redact_known_names(
    frame: pl.DataFrame, textual: list[str], episodes: pl.Series, names: pl.DataFrame
) -> tuple[pl.DataFrame, int]:
    """`frame` with each name of `names` (episode_id, name) replaced by [PERSON] in the string
    leaves of `textual` of the rows of that episode (`episodes`: each row's episode), and the
    number of names replaced (a text repeated n times counts n times)."""
    out, hits = redact_known_names_by_row(frame, textual, episodes, names)
    return out, int(hits.get_column("hits").sum())


HITS_SCHEMA = pl.Schema({"row": pl.UInt32, "hits": pl.Int64})


def redact_known_names_by_row(
    frame: pl.DataFrame, textual: list[str], episodes: pl.Series, names: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """`redact_known_names` with the names replaced counted per row (row: its index in `frame`,
    hits; only rows with some): the release counts them over the rows it keeps, which the same
    privatized rows serve whatever rows it drops."""
    none = pl.DataFrame(schema=HITS_SCHEMA)
    if not textual or frame.height == 0:
        return frame, none
    own = names.join(pl.DataFrame({"episode_id": episodes.unique()}), on="episode_id", how="semi")
    if own.height == 0:
        return frame, none
    # the distinct texts holding any name of the partition (a superset of the whole words: "Ben"
    # in "Bentley" too), numbered, with the row, episode and column of each of their occurrences
    # (rows without an episode too): the long strings are hashed once
    leaves = _leaves(frame, textual, word_pattern(own.get_column("name").to_list()))
    texts = (
        leaves.with_columns(episode_id=episodes.gather(leaves.get_column("row")))
        .group_by("value")
        .agg("row", "episode_id", "column")
        .with_row_index("text")
    )
    if texts.height == 0:
        return frame, none
    occurrences = texts.select("text", "row", "episode_id", "column").explode(
        "row", "episode_id", "column"
    )
    pairs = occurrences.group_by("episode_id", "text").agg(n=pl.len())
    changes = _rewritten(pairs, own, texts.select("text", "value"))
    hits = (
        occurrences.join(changes.select("episode_id", "text", "hits"), on=["episode_id", "text"])
        .group_by("row")
        .agg(pl.col("hits").sum())
        .sort("row")
        .cast(HITS_SCHEMA)
    )
    return _apply(frame, textual, episodes, changes, pairs, occurrences, texts), hits


def _rewritten(pairs: pl.DataFrame, own: pl.DataFrame, texts: pl.DataFrame) -> pl.DataFrame:
    """episode_id, text, n, cleaned, hits, alike of each (episode, text) pair of `pairs`
    (episode_id, text, n) that `rewrite` of the text with its own episode's names changes, and
    whether it changes it as the text's `union_rewrite` (`texts`: text, value; then also cleaned).

    Each distinct text is rewritten once with all the partition's names, in Rust; Python rewrites
    only the pairs where that is not their own episode's rewrite: a name of another episode
    found, a name of its own that is not `is_plain`, or one name right after another."""
    plain_names = [n for n in own.get_column("name").unique().to_list() if is_plain(n)]
    plain = own.filter(pl.col("name").is_in(plain_names))
    odd = own.join(plain, on=["episode_id", "name"], how="anti").get_column("episode_id")
    named = pairs.join(own.select("episode_id").unique(), on="episode_id", how="semi")
    # names of other episodes can be found only where some episode lacks one of the names
    alike_names = plain.group_by("episode_id").len().get_column("len").min() == len(plain_names)
    union = pl.concat(
        [texts, union_rewrite(texts.get_column("value"), plain_names, not alike_names)],
        how="horizontal",
    )
    foreign = pl.DataFrame(schema={"episode_id": pl.String, "text": pl.UInt32})
    if not alike_names:
        foreign = (
            named.select("episode_id", "text")
            .join(union.select("text", "found").explode("found").drop_nulls(), on="text")
            .join(plain.rename({"name": "found"}), on=["episode_id", "found"], how="anti")
            .select("episode_id", "text")
            .unique()
        )
    ours = named.join(union.filter("exact").select("text", "cleaned", "hits"), on="text").join(
        foreign, on=["episode_id", "text"], how="anti"
    )
    ours = ours.filter(~pl.col("episode_id").is_in(odd.implode()))
    others = named.join(ours, on=["episode_id", "text"], how="anti")
    confirmed = _confirmed(others, own, union.select("text", "value", union="cleaned"))
    return pl.concat(
        [ours.with_columns(alike=pl.lit(True)), confirmed], how="diagonal_relaxed"
    ).filter(pl.col("hits") > 0)


def _confirmed(pairs: pl.DataFrame, own: pl.DataFrame, texts: pl.DataFrame) -> pl.DataFrame:
    """`rewrite` in Python of each (episode, text) pair of `pairs` with its episode's names, and
    whether it is its text's `union` rewrite (`texts`: text, value, union)."""
    names = own.group_by("episode_id").agg(pl.col("name").sort())
    todo = pairs.join(names, on="episode_id").join(texts, on="text")
    distinct = todo.select("text", "name").unique()  # a text and names of several episodes
    values = distinct.join(texts, on="text", how="left").get_column("value")
    rewritten = [rewrite(v, n) for v, n in zip(values, distinct.get_column("name"), strict=True)]
    done = distinct.with_columns(
        cleaned=pl.Series([text for text, _ in rewritten], dtype=pl.String),
        hits=pl.Series([n for _, n in rewritten], dtype=pl.Int64),
    )
    return todo.join(done, on=["text", "name"]).select(
        "episode_id", "text", "n", "cleaned", "hits", alike=pl.col("cleaned") == pl.col("union")
    )


def _leaves(frame: pl.DataFrame, textual: list[str], pattern: str) -> pl.DataFrame:
    """(column, row, value) of every non-null string leaf of `textual` that `pattern` matches, one
    per occurrence (`column`: the leaf's column; `row`: its row's index in `frame`). Filtered
    before anything else is attached to a leaf: most hold no name."""
    indexed = frame.select(textual).with_row_index("row")
    schema = {"column": pl.String, "row": pl.UInt32, "value": pl.String}
    parts = [pl.DataFrame(schema=schema)]
    for column in textual:
        leaves = tagged_leaves(indexed.select("row", value=pl.col(column)))
        parts.extend(
            leaf.filter(pl.col("value").str.contains(pattern)).select(
                pl.lit(column).alias("column"), "row", "value"
            )
            for leaf in leaves
        )
    return pl.concat(parts)


def _apply(
    frame: pl.DataFrame,
    textual: list[str],
    episodes: pl.Series,
    changes: pl.DataFrame,
    pairs: pl.DataFrame,
    occurrences: pl.DataFrame,
    texts: pl.DataFrame,
) -> pl.DataFrame:
    """Replaces each changed text in the rows of the episode it changed in (a text in two
    episodes of which one knows the name changes in that one's rows only), only in the rows that
    hold a change. A text changed alike in every episode it occurs in (each of its `pairs`) is
    replaced by value alone; only the others are matched on their (episode, text). In a string
    column each changed occurrence's new text is known by row (`occurrences`) and put there."""
    alike = (
        changes.group_by("text")
        .agg(pl.len(), pl.col("alike").all(), pl.col("cleaned").first())
        .join(pairs.group_by("text").agg(pairs=pl.len()), on="text")
        .filter(pl.col("alike") & (pl.col("len") == pl.col("pairs")))
        .select("text", "cleaned")
    )
    keyed = changes.join(alike, on="text", how="anti").select("episode_id", "text", "cleaned")
    # each changed occurrence's new text, by column: a string column holds one a row, put in its
    # place by row with no text hashed; a nested column's rows holding one are rewritten alone
    changed = (
        occurrences.join(alike, on="text", how="left")
        .join(keyed.rename({"cleaned": "own"}), on=["episode_id", "text"], how="left")
        .select("column", "row", "text", cleaned=pl.coalesce("cleaned", "own"))
        .drop_nulls("cleaned")
        .sort("row")
        .partition_by("column", as_dict=True, include_key=False)
    )
    values = texts.select("text", "value")
    for column in textual:
        mine = changed.get((column,))
        if mine is None:
            continue
        if frame.schema[column] == pl.String:
            rows, new = mine.get_column("row"), mine.get_column("cleaned")
        else:
            rows = mine.get_column("row").unique(maintain_order=True)
            here = mine.select("text").unique()
            new = _rewrite_rows(
                frame.select(column)[rows],
                episodes.gather(rows),
                alike.join(here, on="text", how="semi").join(values, on="text"),
                keyed.join(here, on="text", how="semi").join(values, on="text"),
            )
        frame = frame.with_columns(put_rows(frame.get_column(column), rows, new))
    return frame


def _rewrite_rows(
    part: pl.DataFrame, episodes: pl.Series, alike: pl.DataFrame, keyed: pl.DataFrame
) -> pl.Series:
    """The one nested column of `part` (some rows, `episodes` theirs) with the texts of `alike`
    (value, cleaned) replaced by value, then those of `keyed` (episode_id, value, cleaned) in their
    episode's rows."""
    column = part.columns[0]
    if alike.height:
        old, new = alike.get_column("value"), alike.get_column("cleaned")
        replaced = replace_strings(pl.col(column), part.schema[column], old, new)
        part = part.with_columns(replaced.alias(column))
    if keyed.height:
        lookup = keyed.select("episode_id", "value", "cleaned")
        part = replace_keyed_strings(part, [column], episodes, lookup)
    return part.to_series()
