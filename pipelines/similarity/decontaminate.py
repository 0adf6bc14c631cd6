"""Which training texts overlap an evaluation prompt, two ways (docs/concepts/decontamination.md):

- **n-gram overlap**, as open-instruct's decontamination scores it: the share of an evaluation
  prompt's words covered by its `ngram_size`-word n-grams that also occur in the training text;
  above `ngram_share`, the text is contaminated by that prompt. A prompt of fewer words than
  `ngram_size` has no n-gram: only the MinHash test can find it.
- **MinHash near-duplicates** (minhash.py): an estimated Jaccard similarity of their word shingles
  of at least `threshold`.

Columnar where the corpus is: the training texts' words and n-grams are Polars rows, joined with
the evaluation side's hashed n-grams; only texts that can reach the MinHash threshold are signed
(a text sharing fewer than half the threshold's share of its shingles with all evaluation prompts
together cannot be that similar to any one of them: |A ∩ B| ≥ t·|A ∪ B| ≥ t·|A|).
"""

from __future__ import annotations

import polars as pl

from pipelines.similarity.minhash import MinHashParams, near_duplicates, shingles, signatures
from pipelines.similarity.words import ngram_rows, word_rows

# Bytes of training text matched at a time: bounds the word and n-gram rows held (~700 000 words;
# the words of 20 MB of demo text at once peaked at ~1 GB)
CHUNK_BYTES = 4 * 2**20
MATCHES_SCHEMA = pl.Schema({"text_id": pl.Int64, "prompt_id": pl.Int64})


def contaminated(
    texts: pl.DataFrame,
    prompts: pl.DataFrame,
    ngram_size: int,
    ngram_share: float,
    minhash: MinHashParams,
) -> pl.DataFrame:
    """(text_id, prompt_id), unique: each training text (`texts`: text_id Int64, text) that overlaps
    an evaluation prompt (`prompts`: prompt_id Int64, prompt) by either test."""
    eval_words = word_rows(prompts, "prompt_id", "prompt")
    eval_grams = ngram_rows(eval_words, "prompt_id", ngram_size)
    eval_shingles = shingles(eval_words, "prompt_id", minhash.shingle_size)
    eval_signatures = signatures(eval_shingles, "prompt_id", minhash)
    found = [pl.DataFrame(schema=MATCHES_SCHEMA)]
    chunks = texts.with_columns(
        _chunk=pl.col("text").str.len_bytes().cum_sum().fill_null(0) // CHUNK_BYTES
    ).partition_by("_chunk", include_key=False, maintain_order=True)
    for part in chunks:
        chunk = word_rows(part, "text_id", "text")
        found.append(_by_ngrams(chunk, eval_grams, ngram_size, ngram_share))
        found.append(_by_minhash(chunk, eval_shingles, eval_signatures, minhash))
    return pl.concat(found).unique().sort("text_id", "prompt_id")


def _by_ngrams(
    text_words: pl.DataFrame, eval_grams: pl.DataFrame, n: int, share: float
) -> pl.DataFrame:
    grams = ngram_rows(text_words, "text_id", n).select("text_id", "gram").unique()
    shared = grams.join(eval_grams.select("gram").unique(), on="gram", how="semi")
    # the prompt's words its shared n-grams cover: the union of [pos, pos + n) over the n-grams'
    # starts, each start adding the words up to the next start (at most n)
    pair = ["text_id", "prompt_id"]
    starts = shared.join(eval_grams, on="gram").select(*pair, "n_words", "pos").unique()
    covered = (
        starts.sort(*pair, "pos")
        .with_columns(next=pl.col("pos").shift(-1).over(pair))
        .group_by(*pair, "n_words")
        .agg(word=(pl.col("next") - pl.col("pos")).clip(upper_bound=n).fill_null(n).sum())
    )
    return covered.filter(pl.col("word") > share * pl.col("n_words")).select(MATCHES_SCHEMA.names())


def _by_minhash(
    text_words: pl.DataFrame,
    eval_shingles: pl.DataFrame,
    eval_signatures: dict,
    params: MinHashParams,
) -> pl.DataFrame:
    own = shingles(text_words, "text_id", params.shingle_size)
    known = eval_shingles.select("gram").unique()
    counts = own.with_columns(shared=pl.col("gram").is_in(known.get_column("gram"))).group_by(
        "text_id"
    )
    possible = counts.agg(pl.len().alias("total"), pl.col("shared").sum()).filter(
        pl.col("shared") >= params.threshold / 2 * pl.col("total")
    )
    if possible.height == 0:
        return pl.DataFrame(schema=MATCHES_SCHEMA)
    candidates = own.join(possible.select("text_id"), on="text_id", how="semi")
    pairs = near_duplicates(signatures(candidates, "text_id", params), eval_signatures, params)
    return pairs.select(text_id="query", prompt_id="match")
