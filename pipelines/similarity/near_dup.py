"""Near-duplicate clusters of prompts, columnar: normalized prompt keys, MinHash signatures of the
new ones only, LSH bands joined in Polars, candidate pairs verified and joined into clusters.

- A prompt's **key** is the sha256 of the settings' scheme (shingle size, permutations, the
  engine) and its normalized words (words.py): prompts differing only in punctuation, case or
  spacing share a key, so they are one prompt here, and a stored signature is found again by key.
- Its **signature**: `num_perm` MinHash values (rensa, from the prompt's hashed word shingles,
  all new prompts in one call: no Python per prompt), stored by the caller and never recomputed
  for a key it already has.
- **Candidates**: prompts whose signatures agree on every value of one of `bands` bands. A band
  bucket holding many prompts (a template with 1 000 names) would give n² pairs; each member is
  paired with the bucket's first member and with the next one in key order instead (2 pairs a
  member), which keeps every verified link of a chain of similar prompts and costs O(n).
- **Verified**: a candidate pair is an edge when the share of equal signature values (the
  estimated Jaccard similarity of their shingle sets) reaches `threshold`.
- **Clusters**: the connected components of the edges, each named after its smallest key.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import polars_hash
from rensa import RMinHash

from pipelines.config.splits import NearDuplicates
from pipelines.similarity.minhash import SEED
from pipelines.similarity.words import ngram_rows, word_rows, words

# the values' bits as Int32: Delta tables have no unsigned integers, and equality is all they serve
SIGNATURES_SCHEMA = pl.Schema({"key": pl.String, "signature": pl.List(pl.Int32)})
CLUSTERS_SCHEMA = pl.Schema({"key": pl.String, "cluster": pl.String})


def normalized(text: pl.Expr) -> pl.Expr:
    """A prompt's normalized words joined by one space (empty for a prompt without a word)."""
    return words(text).list.join(" ")


def prompt_key(text: pl.Expr, scheme: str) -> pl.Expr:
    """The key of a prompt: sha256 hex of `scheme` NUL its normalized words (null for a null
    prompt or one without a word)."""
    norm = normalized(text)
    keyed = pl.lit(scheme + "\x00") + norm
    digest = polars_hash.CryptographicHashingNameSpace(keyed.cast(pl.Binary)).sha2_256()
    return pl.when(norm.str.len_bytes() > 0).then(digest)


def sign(prompts: pl.DataFrame, params: NearDuplicates) -> pl.DataFrame:
    """SIGNATURES_SCHEMA: the signature of each distinct key of `prompts` (key, text), one rensa
    call for all of them."""
    distinct = prompts.drop_nulls("key").unique("key", keep="first").sort("key")
    if distinct.height == 0:
        return pl.DataFrame(schema=SIGNATURES_SCHEMA)
    ids = distinct.with_row_index("_id", offset=0).with_columns(pl.col("_id").cast(pl.Int64))
    shingled = (
        ngram_rows(word_rows(ids, "_id", "text"), "_id", params.shingle_size, short=True)
        .select("_id", "gram")
        .unique()
        .sort("_id", "gram")
    )
    counts = shingled.group_by("_id").len().sort("_id").get_column("len").to_numpy()
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.uint64)
    hashes = shingled.get_column("gram").to_numpy().astype(np.uint64)
    matrix = RMinHash.digest_matrix_from_flat_token_hashes(hashes, offsets, params.num_perm, SEED)
    rows = np.asarray(matrix.to_rows(), dtype=np.uint32).view(np.int32)
    return pl.DataFrame(
        {"key": distinct.get_column("key"), "signature": pl.Series(rows).cast(pl.List(pl.Int32))}
    ).cast(SIGNATURES_SCHEMA)


def _candidates(signatures: pl.DataFrame, params: NearDuplicates) -> pl.DataFrame:
    """(a, b) key pairs, a < b, sharing a band: each member of a bucket with its first member
    and its successor (module docstring)."""
    rows = params.num_perm // params.bands
    bands = signatures.select(
        "key",
        *[
            pl.col("signature").list.slice(b * rows, rows).hash(SEED).alias(f"b{b}")
            for b in range(params.bands)
        ],
    ).unpivot(index="key", variable_name="band", value_name="bucket")
    shared = bands.filter(pl.len().over("band", "bucket") > 1).sort("band", "bucket", "key")
    first = shared.with_columns(b=pl.col("key"), a=pl.col("key").first().over("band", "bucket"))
    chain = shared.with_columns(a=pl.col("key"), b=pl.col("key").shift(-1).over("band", "bucket"))
    both = pl.concat([first.select("a", "b"), chain.select("a", "b")])
    return both.filter(pl.col("a") < pl.col("b")).unique()


def _verified(
    pairs: pl.DataFrame, signatures: pl.DataFrame, params: NearDuplicates
) -> pl.DataFrame:
    """The pairs whose signatures agree on at least `threshold` of their values."""
    if pairs.height == 0:
        return pairs
    index = {k: i for i, k in enumerate(signatures.get_column("key").to_list())}
    matrix = np.asarray(signatures.get_column("signature").to_list(), dtype=np.int32)
    a = pairs.get_column("a").replace_strict(index, return_dtype=pl.Int64).to_numpy()
    b = pairs.get_column("b").replace_strict(index, return_dtype=pl.Int64).to_numpy()
    share = (matrix[a] == matrix[b]).mean(axis=1)
    return pairs.filter(pl.Series(share >= params.threshold))


def components(edges: pl.DataFrame, nodes: pl.Series) -> pl.DataFrame:
    """(node, component): each node of `nodes` and the smallest node connected to it by the
    undirected `edges` (a, b). Label propagation: each round a node takes the smallest label of
    itself and its neighbours, then the label of its label (pointer jumping, so a chain of n
    near-duplicates settles in about log n rounds, not n)."""
    labels = pl.DataFrame({"node": nodes.unique()}).select("node", component="node")
    both = pl.concat([edges.select("a", "b"), edges.select(a="b", b="a")])
    while True:
        lower = (
            both.join(labels, left_on="b", right_on="node")
            .group_by("a")
            .agg(_lower=pl.col("component").min())
        )
        stepped = labels.join(lower, left_on="node", right_on="a", how="left").select(
            "node", component=pl.min_horizontal("component", "_lower")
        )
        jumped = stepped.join(
            stepped.select(component="node", _next="component"), on="component", how="left"
        ).select("node", component=pl.min_horizontal("component", "_next"))
        if jumped.join(labels, on=["node", "component"], how="anti").height == 0:
            return jumped
        labels = jumped


def clusters(signatures: pl.DataFrame, params: NearDuplicates) -> pl.DataFrame:
    """CLUSTERS_SCHEMA: every key of `signatures` and its near-duplicate cluster (the smallest key
    connected to it by verified pairs; a prompt with no near-duplicate is its own)."""
    if signatures.height == 0:
        return pl.DataFrame(schema=CLUSTERS_SCHEMA)
    edges = _verified(_candidates(signatures, params), signatures, params)
    found = components(edges, signatures.get_column("key"))
    return found.select(key="node", cluster="component").cast(CLUSTERS_SCHEMA).sort("key")
