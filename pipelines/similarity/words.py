"""Texts as normalized words and hashed word n-grams, in Polars (columnar: no Python per text).

A word is a run of letters, digits or `_` (Unicode-aware), lower-cased: punctuation, case and
spacing do not tell two texts apart, as they would not tell a reader."""

from __future__ import annotations

import polars as pl

WORD = r"\w+"
_SEED = 0x7E57  # any fixed seed: the hashes are compared within one run, never stored


def words(text: pl.Expr) -> pl.Expr:
    """The list of normalized words of a String expression."""
    return text.str.to_lowercase().str.extract_all(WORD)


def word_rows(frame: pl.DataFrame, id_column: str, text_column: str) -> pl.DataFrame:
    """(id, pos, n_words, h) for every word of every text, one row per word in order (`h`: a
    UInt64 hash of the word)."""
    listed = frame.select(id_column, word=words(pl.col(text_column))).with_columns(
        n_words=pl.col("word").list.len().cast(pl.Int32)
    )
    return (
        listed.filter(pl.col("n_words") > 0)
        .with_columns(pos=pl.int_ranges(0, pl.col("n_words"), dtype=pl.Int32))
        .explode("word", "pos")
        .select(id_column, "pos", "n_words", h=pl.col("word").hash(_SEED))
    )


def ngram_rows(rows: pl.DataFrame, id_column: str, n: int, *, short: bool = False) -> pl.DataFrame:
    """(id, pos, n_words, gram) of every window of n words of `word_rows` output (`gram`: a UInt64
    hash of its words in order, `pos`: its first word's place). A text of fewer than n words has
    none, or with `short` one window of all its words (a 2-word prompt still has a shingle).

    The rows are each text's words in order, so the k-th word after a row is `shift(-k)` of the
    whole column (no grouping per text); a window running past its text's end is dropped."""
    width = pl.min_horizontal(pl.col("n_words"), pl.lit(n, pl.Int32)) if short else pl.lit(n)
    following = [
        pl.when(pl.col("_width") > k)
        .then(pl.col("h").shift(-k))
        .otherwise(pl.lit(0, pl.UInt64))
        .alias(f"h{k}")
        for k in range(1, n)
    ]
    return (
        rows.with_columns(_width=width.cast(pl.Int32))
        .with_columns(gram=pl.struct(pl.col("h"), *following).hash(_SEED))
        .filter(pl.col("pos") + pl.col("_width") <= pl.col("n_words"))
        .select(id_column, "pos", "n_words", "gram")
    )
