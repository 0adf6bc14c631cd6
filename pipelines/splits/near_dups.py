"""Near-duplicate prompt clusters as split-grouping edges (docs/concepts/near-duplicates.md).

The silver plan hands every unit's prompt (its episodes' first user text, read from bronze by the
source's `unit_prompts`) to `prompt_clusters`, which signs only the prompts whose key the stored
signatures lack, and clusters them all (similarity/near_dup.py). The clusters are stored in silver
(`_near_duplicates`: episode_id, dedup_cluster, partition) with the signatures
(`_prompt_signatures`), and
`split_groups` turns them into what a split is hashed by: the groups holding prompts of one
cluster (and so, transitively, of clusters sharing a group) are one split group, named after
their smallest group id. Pure: no Dagster here.
"""

from __future__ import annotations

import polars as pl

from pipelines.config.splits import NearDuplicates
from pipelines.similarity.near_dup import SIGNATURES_SCHEMA, clusters, components, prompt_key, sign
from pipelines.storage.engine import engine_digest
from pipelines.storage.fingerprint import fingerprint, json_part

NEAR_DUPS_TABLE = "_near_duplicates"  # silver: each episode's prompt cluster
SIGNATURES_TABLE = "_prompt_signatures"  # silver: each distinct prompt's signature and cluster
PROMPTS_SCHEMA = pl.Schema({"unit": pl.String, "text": pl.String})
UNIT_CLUSTERS_SCHEMA = pl.Schema({"unit": pl.String, "dedup_cluster": pl.String})
# `partition`: where the episode lives (the release reads a partition's rows of it)
NEAR_DUPS_SCHEMA = pl.Schema(
    {"episode_id": pl.String, "dedup_cluster": pl.String, "partition": pl.String}
)
# `cluster`: the smallest content hash (sha256 of the normalized words alone) of its prompts
STORED_SCHEMA = pl.Schema({**SIGNATURES_SCHEMA, "cluster": pl.String})
SPLIT_GROUPS_SCHEMA = pl.Schema({"group_id": pl.String, "split_group": pl.String})


def key_scheme(params: NearDuplicates) -> str:
    """What a prompt's key holds besides its words: the settings and the engine, so a stored
    signature (or cluster: threshold and bands make those) made by other code or settings is
    never found again."""
    return fingerprint([json_part(params.record()), engine_digest()])


def prompt_clusters(
    prompts: pl.DataFrame, stored: pl.DataFrame, params: NearDuplicates
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(unit, dedup_cluster) of every unit of `prompts` (unit, text) with a prompt of at least
    one word, and the signatures to store (STORED_SCHEMA: the previous `stored` kept for the keys
    still present, the new keys signed; clusters made again only when the set of keys changed)."""
    if not params.enabled:
        return pl.DataFrame(schema=UNIT_CLUSTERS_SCHEMA), pl.DataFrame(schema=STORED_SCHEMA)
    keyed = prompts.select(
        "unit",
        "text",
        key=prompt_key(pl.col("text"), key_scheme(params)),
        # the prompt's content alone: what a cluster is named by (released, keyed, as
        # dedup_cluster), so its name does not change with the engine
        label=prompt_key(pl.col("text"), ""),
    )
    keyed = keyed.drop_nulls("key")
    present = keyed.select("key").unique()
    kept = stored.join(present, on="key", how="semi")
    new = keyed.join(stored.select("key"), on="key", how="anti")
    if new.height == 0 and kept.height == stored.height:
        found = stored  # the same prompts: their clusters as stored
    else:
        signatures = pl.concat([kept.select(SIGNATURES_SCHEMA.names()), sign(new, params)])
        found = signatures.join(clusters(signatures, params), on="key", how="left")
        labels = keyed.select("key", "label").unique("key")
        found = found.join(labels, on="key", how="left").with_columns(
            cluster=pl.col("label").min().over("cluster")
        )
    found = found.select(STORED_SCHEMA.names()).cast(STORED_SCHEMA).sort("key")
    units = keyed.join(found.select("key", "cluster"), on="key", how="inner").select(
        "unit", dedup_cluster="cluster"
    )
    return units.cast(UNIT_CLUSTERS_SCHEMA).sort("unit"), found


def split_groups(episodes: pl.DataFrame, near_dups: pl.DataFrame) -> pl.DataFrame:
    """(group_id, split_group) of every group of `episodes` (episode_id, group_id): the smallest
    group id of the groups its episodes' prompt clusters (`near_dups`: episode_id, dedup_cluster)
    join it to, itself when none does."""
    groups = episodes.get_column("group_id").drop_nulls().unique()
    held = episodes.join(near_dups, on="episode_id", how="inner").select(
        "group_id", "dedup_cluster"
    )
    # each group tied to the first group of each cluster it holds a prompt of: one edge a group
    first = held.group_by("dedup_cluster").agg(pl.col("group_id").min().alias("_first"))
    edges = held.join(first, on="dedup_cluster").select(a="group_id", b="_first").unique()
    found = components(edges, groups)
    return found.select(group_id="node", split_group="component").cast(SPLIT_GROUPS_SCHEMA)
