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

from pipelines.privacy.known_names import NAMES_SCHEMA, rewrite, word_pattern
from pipelines.privacy.text_leaves import replace_keyed_strings

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
    leaves = _leaves(frame, textual, episodes)
    # texts holding any name of the partition, then each with the names of its own episode it
    # holds somewhere (a superset of the whole words: "Ben" in "Bentley" too)
    found = (
        leaves.select("episode_id", "value")
        .unique()
        .filter(pl.col("value").str.contains(word_pattern(own.get_column("name").to_list())))
        .join(own, on="episode_id")
        .filter(pl.col("value").str.contains(pl.col("name"), literal=True))
        .group_by("episode_id", "value")
        .agg(pl.col("name").sort())
    )
    if found.height == 0:
        return frame, none
    distinct = found.select("value", "name").unique()  # a text and names of several episodes
    rewritten = [rewrite(v, n) for v, n in distinct.iter_rows()]
    changes = (
        found.join(
            distinct.with_columns(
                cleaned=pl.Series([text for text, _ in rewritten], dtype=pl.String),
                hits=pl.Series([n for _, n in rewritten], dtype=pl.Int64),
            ),
            on=["value", "name"],
        )
        .filter(pl.col("hits") > 0)
        .select("episode_id", "value", "cleaned", "hits")
    )
    hits = (
        leaves.join(changes, on=["episode_id", "value"])
        .group_by("row")
        .agg(pl.col("hits").sum())
        .sort("row")
        .cast(HITS_SCHEMA)
    )
    return _apply(frame, textual, episodes, changes), hits


def _leaves(frame: pl.DataFrame, textual: list[str], episodes: pl.Series) -> pl.DataFrame:
    """(row, episode_id, value) of every non-null string leaf of `textual`, one per
    occurrence."""
    tagged = frame.select(textual).with_columns(episode_id=episodes).with_row_index("row")
    schema = {"row": pl.UInt32, "episode_id": pl.String, "value": pl.String}
    parts = [pl.DataFrame(schema=schema)]
    for column in textual:
        parts.extend(_column_leaves(tagged.select("row", "episode_id", value=pl.col(column))))
    return pl.concat(parts).drop_nulls()


def _column_leaves(frame: pl.DataFrame) -> list[pl.DataFrame]:
    dtype = frame.schema["value"]
    if dtype == pl.String:
        return [frame]
    if isinstance(dtype, pl.List):
        return _column_leaves(frame.explode("value"))
    if isinstance(dtype, pl.Struct):
        return [
            part
            for f in dtype.fields
            for part in _column_leaves(
                frame.select("row", "episode_id", value=pl.col("value").struct.field(f.name))
            )
        ]
    return []


def _apply(
    frame: pl.DataFrame, textual: list[str], episodes: pl.Series, changes: pl.DataFrame
) -> pl.DataFrame:
    """Replaces each changed text in the rows of the episode it changed in, in one plan per
    column (a text in two episodes of which one knows the name changes in that one's rows only)."""
    return replace_keyed_strings(
        frame, textual, episodes, changes.select("episode_id", "value", "cleaned")
    )
