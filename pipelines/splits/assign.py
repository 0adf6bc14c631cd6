"""Leakage-free splits (DESIGN §4): whole groups, assigned by a stable hash of (salt, split group).

A group's split group is itself, or, when its prompts have near-duplicates in other groups
(near_dups.py), the smallest group id of the groups those clusters join: `assign_splits` is a pure
function of each split group, so adding groups never moves an existing one unless a new prompt
joins its near-duplicate cluster to another's. `split_proof` is the evidence that nothing
straddles: no group, no human participant, no exact prompt, no near-duplicate cluster in two
splits, computed with DuckDB SQL that ships inside the proof. Pure: no Dagster here.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import duckdb
import polars as pl

from pipelines.config.splits import N_BUCKETS, SplitConfig
from pipelines.sources.base import sha256_hex
from pipelines.splits.near_dups import NEAR_DUPS_TABLE, split_groups
from pipelines.splits.participants import checked_participants, human_participants
from pipelines.storage import tables as stored
from pipelines.storage.engine import engine_digest
from pipelines.storage.fingerprint import fingerprint, json_part
from pipelines.storage.layout import Layout


def buckets_of(salt: str, split_groups: pl.Expr) -> pl.Expr:
    """Each group's bucket: the first 8 bytes of sha256(salt NUL split group) mod N_BUCKETS, the
    same on every machine and run (Python's hash() is salted per process, so it must never be used
    here); computed in the plan, no Python per group (sha256 in Rust)."""
    digest = sha256_hex(pl.concat_str(pl.lit(f"{salt}\x00"), split_groups))
    first_8_bytes = digest.str.slice(0, 16).str.to_integer(base=16, dtype=pl.UInt64)
    return (first_8_bytes % N_BUCKETS).cast(pl.Int64)


def assign_splits(
    group_ids: pl.Series, config: SplitConfig, split_groups: pl.DataFrame | None = None
) -> pl.DataFrame:
    """One row per distinct non-null group id: group_id, bucket, split, salt, split_group (sorted
    by group_id). The bucket hashes the group's split group (`split_groups`: group_id,
    split_group; a group it does not name is its own)."""
    groups = group_ids.cast(pl.String).drop_nulls().unique().sort()
    named = pl.DataFrame({"group_id": groups})
    if split_groups is not None:
        given = split_groups.select("group_id", "split_group").unique("group_id", keep="first")
        named = named.join(given, on="group_id", how="left", maintain_order="left")
    else:
        named = named.with_columns(split_group=pl.lit(None, pl.String))
    named = named.with_columns(pl.col("split_group").fill_null(pl.col("group_id")))
    split = pl.lit(None, pl.String)
    for name, (start, end) in reversed(config.bucket_ranges().items()):
        split = (
            pl.when(pl.col("bucket").is_between(start, end, closed="left"))
            .then(pl.lit(name))
            .otherwise(split)
        )
    return named.with_columns(bucket=buckets_of(config.salt, pl.col("split_group"))).select(
        "group_id", "bucket", split=split, salt=pl.lit(config.salt), split_group="split_group"
    )


# ---------------------------------------------------------------- the proof

# Each query reads registered frames: splits, episodes, participants, near_duplicates (episode_id,
# dedup_cluster), dataset (one at a time), prompts. A query over released rows (dataset, prompts)
# lists splits only for the keys a cheap min <> max pass finds in two of them (the HAVING clause
# still decides): listing them for every key cost ~7x as much (1 M prompt rows: 1.2 -> 0.18 s).
SQL: dict[str, str] = {
    "groups_per_split": "SELECT split, count(*) AS n FROM splits GROUP BY split ORDER BY split",
    "bucket_ranges": "SELECT split, min(bucket) AS lo, max(bucket) AS hi FROM splits GROUP BY "
    "split ORDER BY lo",
    "group_overlap": "SELECT group_id, list(split ORDER BY split) AS splits FROM splits "
    "GROUP BY group_id HAVING count(*) > 1",
    "unassigned_groups": "SELECT DISTINCT group_id FROM episodes "
    "WHERE group_id NOT IN (SELECT group_id FROM splits) ORDER BY group_id",
    "episodes_per_split": "SELECT s.split, count(*) AS n FROM episodes e JOIN splits s USING "
    "(group_id) "
    "GROUP BY s.split ORDER BY s.split",
    "participants_per_split": "SELECT s.split, count(DISTINCT p.participant_id) AS n FROM "
    "participants p "
    "JOIN episodes e USING (episode_id) JOIN splits s USING (group_id) "
    "GROUP BY s.split ORDER BY s.split",
    "participant_overlap": "SELECT p.participant_id, list(DISTINCT s.split ORDER BY s.split) AS "
    "splits "
    "FROM participants p JOIN episodes e USING (episode_id) JOIN splits s USING (group_id) "
    "GROUP BY p.participant_id HAVING count(DISTINCT s.split) > 1 ORDER BY 1",
    "near_duplicate_overlap": "SELECT n.dedup_cluster, list(DISTINCT s.split ORDER BY s.split) "
    "AS splits FROM near_duplicates n JOIN episodes e USING (episode_id) JOIN splits s USING "
    "(group_id) GROUP BY n.dedup_cluster HAVING count(DISTINCT s.split) > 1 ORDER BY 1",
    "near_duplicate_clusters": "SELECT count(DISTINCT dedup_cluster) AS clusters, count(*) AS "
    "episodes FROM near_duplicates",
    "dataset_rows_per_split": "SELECT split, count(*) AS n FROM dataset GROUP BY split ORDER BY "
    "split",
    "dataset_group_overlap": "SELECT group_id, list(DISTINCT split ORDER BY split) AS splits FROM "
    "dataset WHERE group_id IS NULL OR group_id IN (SELECT group_id FROM dataset GROUP BY "
    "group_id HAVING min(split) <> max(split)) "
    "GROUP BY group_id HAVING count(DISTINCT split) > 1 ORDER BY 1",
    "dataset_split_mismatch": "SELECT d.group_id, d.split, s.split AS assigned FROM dataset d "
    "LEFT JOIN splits s USING (group_id) WHERE s.split IS DISTINCT FROM d.split",
    "dataset_prompt_overlap": "SELECT prompt_hash, list(DISTINCT split ORDER BY split) AS splits "
    "FROM dataset "
    "WHERE prompt_hash IN (SELECT prompt_hash FROM dataset GROUP BY prompt_hash "
    "HAVING min(split) <> max(split)) GROUP BY prompt_hash "
    "HAVING count(DISTINCT split) > 1 ORDER BY 1",
    "dataset_episode_not_whole": "SELECT episode_id, count(DISTINCT prompt_hash) AS prompt_hashes, "
    "list(DISTINCT split ORDER BY split) AS splits FROM dataset WHERE episode_id IS NULL OR "
    "episode_id IN (SELECT episode_id FROM dataset GROUP BY episode_id HAVING "
    "min(prompt_hash) <> max(prompt_hash) OR min(split) <> max(split)) GROUP BY episode_id "
    "HAVING count(DISTINCT prompt_hash) > 1 OR count(DISTINCT split) > 1 ORDER BY 1",
    "prompt_overlap_across_datasets": "SELECT prompt_hash, list(DISTINCT split ORDER BY split) AS "
    "splits, "
    "list(DISTINCT dataset ORDER BY dataset) AS datasets FROM prompts "
    "WHERE prompt_hash IN (SELECT prompt_hash FROM prompts GROUP BY prompt_hash "
    "HAVING min(split) <> max(split)) GROUP BY prompt_hash "
    "HAVING count(DISTINCT split) > 1 ORDER BY 1",
}
DATASET_COLUMNS = ("group_id", "split", "prompt_hash")
NEAR_DUPS = pl.Schema({"episode_id": pl.String, "dedup_cluster": pl.String})
# What one example is, and so what its `prompt_hash` hashes (duplicate-prompt removal keeps or drops
# examples).
EXAMPLE_UNITS = {
    "rl_steps": "episode: every step of an episode carries the hash of the whole episode's "
    "(observation, action) "
    "sequence, so an episode is kept or dropped whole; an episode in two splits or with two hashes "
    "is reported under `episodes_not_whole`",
    "stepwise": "row: prompt_hash = sha256 of the whole example (prompt and completions), so "
    "examples sharing a scripted opening are not duplicates",
}
DEFAULT_EXAMPLE_UNIT = (
    "row: prompt_hash = sha256 of the row's prompt messages (canonical JSON) as released"
)
EXAMPLES = 10  # offending rows kept in the proof per overlap


def _rows(con: duckdb.DuckDBPyConnection, name: str) -> list[dict]:
    # Python values straight from DuckDB: the same ints, strings and lists as through a Polars
    # frame, without making one per query (~50 queries a release)
    result = con.execute(SQL[name])
    names = [column[0] for column in result.description]
    return [dict(zip(names, row, strict=True)) for row in result.fetchall()]


def _counts(rows: list[dict]) -> dict[str, int]:
    return {str(r["split"]): int(r["n"]) for r in rows}


def _overlap(rows: list[dict]) -> dict:
    return {"count": len(rows), "examples": rows[:EXAMPLES]}


def split_proof(
    splits: pl.DataFrame,
    silver: Mapping[str, pl.DataFrame],
    datasets: Mapping[str, pl.DataFrame],
    config: SplitConfig | None = None,
    participants: pl.DataFrame | None = None,
    near_duplicates: pl.DataFrame | None = None,
) -> dict:
    """JSON-able evidence that no group, participant, exact prompt or near-duplicate prompt
    cluster appears in two splits.

    `config` (optional) adds the configured ratios and checks every row's bucket and split against
    them; without it, buckets are still re-hashed with the table's own salt. With its
    `link_raters` off, raters are not checked (`participants.checked_participants`). `participants`:
    `human_participants(silver)` when the caller already has it (a release built per partition).
    `near_duplicates` (episode_id, dedup_cluster: silver `_near_duplicates`): the prompt clusters
    whose episodes must share a split; without it (none stored) the overlap is over no cluster.
    """
    if participants is None:
        participants = human_participants(silver)
    participants, unchecked = checked_participants(participants, config)
    with duckdb.connect() as con:
        con.register("splits", splits.select("group_id", "bucket", "split", "salt"))
        con.register("episodes", silver["episodes"].select("episode_id", "group_id", "source"))
        con.register("participants", participants)
        near = near_duplicates if near_duplicates is not None else pl.DataFrame(schema=NEAR_DUPS)
        con.register("near_duplicates", near.select(NEAR_DUPS.names()).cast(NEAR_DUPS))
        salts = sorted(splits["salt"].unique().to_list())
        proof: dict[str, Any] = {
            "method": f"split = bucket range of sha256(salt NUL group_id)[:8] mod {N_BUCKETS}, per "
            "group_id",
            "salt": salts[0] if len(salts) == 1 else salts,
            "ratios": dict(config.ratios) if config else None,
            "bucket_ranges": _rows(con, "bucket_ranges"),
            "groups_per_split": _counts(_rows(con, "groups_per_split")),
            "episodes_per_split": _counts(_rows(con, "episodes_per_split")),
            "participants_per_split": _counts(_rows(con, "participants_per_split")),
            "participant_kinds": dict(participants.group_by("kind").len().sort("kind").iter_rows()),
            "bucket_mismatches": _bucket_mismatches(splits, config),
            "overlaps": {
                "groups": _overlap(_rows(con, "group_overlap")),
                "unassigned_groups": _overlap(_rows(con, "unassigned_groups")),
                "participants": _overlap(_rows(con, "participant_overlap")),
                "near_duplicates": _overlap(_rows(con, "near_duplicate_overlap")),
            },
            "near_duplicate_clusters": _rows(con, "near_duplicate_clusters")[0],
            "datasets": {},
            "sql": SQL,
        }
        if unchecked is not None:  # only when off: proofs of the default rule stay as they were
            proof["raters_linked"] = False
            proof["unchecked_participant_kinds"] = unchecked
        prompts = []
        for name, frame in sorted(datasets.items()):
            missing = [c for c in DATASET_COLUMNS if c not in frame.columns]
            if missing:
                proof["datasets"][name] = {"missing_columns": missing}
                continue
            proof["datasets"][name] = _dataset_proof(con, name, frame)
            prompts.append(frame.select("prompt_hash", "split", dataset=pl.lit(name)))
        if prompts:
            con.register("prompts", pl.concat(prompts))
            proof["overlaps"]["prompts_across_datasets"] = _overlap(
                _rows(con, "prompt_overlap_across_datasets")
            )
    return proof


def _dataset_proof(con: duckdb.DuckDBPyConnection, name: str, frame: pl.DataFrame) -> dict:
    """One dataset's rows per split and its overlaps (groups, split mismatches, prompts and, for
    per-episode examples, episodes cut across splits)."""
    per_episode = name in EXAMPLE_UNITS and "episode_id" in frame.columns
    con.register(
        "dataset", frame.select(*DATASET_COLUMNS, *(["episode_id"] if per_episode else []))
    )
    entry = {
        "example": EXAMPLE_UNITS.get(name, DEFAULT_EXAMPLE_UNIT),
        "rows_per_split": _counts(_rows(con, "dataset_rows_per_split")),
        "overlaps": {
            "groups": _overlap(_rows(con, "dataset_group_overlap")),
            "split_mismatch": _overlap(_rows(con, "dataset_split_mismatch")),
            "prompts": _overlap(_rows(con, "dataset_prompt_overlap")),
        },
    }
    if per_episode:
        entry["overlaps"]["episodes_not_whole"] = _overlap(_rows(con, "dataset_episode_not_whole"))
    con.unregister("dataset")
    return entry


def _bucket_mismatches(splits: pl.DataFrame, config: SplitConfig | None) -> int:
    """Rows whose bucket (or, given the config, split) differs from a fresh assignment."""
    if splits.height == 0:
        return 0
    mismatched = 0
    for salt, rows in splits.group_by("salt"):
        named = rows.select("group_id", "split_group") if "split_group" in rows.columns else None
        fresh = assign_splits(rows["group_id"], config or SplitConfig(salt=str(salt[0])), named)
        fresh = fresh.with_columns(salt=pl.lit(salt[0]))
        joined = rows.join(fresh, on="group_id", how="left", suffix="_fresh")
        bad = pl.col("bucket") != pl.col("bucket_fresh")
        if config is not None:
            bad = bad | (pl.col("split") != pl.col("split_fresh")) | (pl.col("salt") != config.salt)
        mismatched += joined.filter(bad).height
    return mismatched


def proof_problems(proof: Mapping[str, Any]) -> list[str]:
    """Every leakage or inconsistency the proof records, in words; empty = leakage-free."""
    problems: list[str] = []
    for key in ("overlaps", "groups_per_split", "datasets", "sql"):
        if key not in proof:
            problems.append(f"proof lacks '{key}'")
    if not isinstance(proof.get("salt"), str):
        problems.append(f"splits do not use one salt: {proof.get('salt')!r}")
    if proof.get("bucket_mismatches", 0):
        problems.append(
            f"{proof['bucket_mismatches']} groups have a bucket or split other than the hash gives"
        )
    for name, overlap in (proof.get("overlaps") or {}).items():
        problems += _overlap_problem(name, overlap)
    for dataset, entry in (proof.get("datasets") or {}).items():
        if entry.get("missing_columns"):
            problems.append(f"{dataset}: lacks column(s) {entry['missing_columns']}")
        for name, overlap in (entry.get("overlaps") or {}).items():
            problems += _overlap_problem(f"{dataset} {name}", overlap)
    return problems


def _overlap_problem(name: str, overlap: Mapping[str, Any]) -> list[str]:
    count = overlap.get("count")
    if count == 0:
        return []
    return [
        (
            f"{name}: {count} found in more than one split (or unassigned), e.g. "
            f"{overlap.get('examples', [])[:3]}"
        )
    ]


# What a release partition's build reads of `splits` (the key of its stored entry digests them)
RELEASED_SPLIT_COLUMNS = ("group_id", "split")


def released_splits(splits: pl.DataFrame) -> pl.DataFrame:
    return splits.select(RELEASED_SPLIT_COLUMNS)


def split_digests(placed: pl.DataFrame, splits: pl.DataFrame, partition: str) -> dict[str, str]:
    """{partition: digest of its groups' (group_id, split)} (`placed`: group_id and the
    `partition` column). A group's split is no longer a function of its id alone (a
    near-duplicate prompt elsewhere can join its split group to another), so what a partition's
    released rows are built from holds its groups' splits: `released_splits`, all a partition's
    build is given of them. Not the split group's name or bucket: a night's group joining a
    cluster renames the split group of every group tied to it (keeping their splits), which
    touched every partition holding one."""
    columns = list(RELEASED_SPLIT_COLUMNS)
    rows = placed.select("group_id", partition).join(splits.select(columns), on="group_id")
    line = pl.concat_str(columns, separator="\x1f", ignore_nulls=True)
    per = rows.group_by(partition).agg(line.sort().str.join("\x1e").alias("_rows"))
    return {
        key: hashlib.sha256(text.encode()).hexdigest()
        for key, text in per.select(partition, "_rows").iter_rows()
    }


def stored_near_duplicates(
    layout: Layout, config: SplitConfig, as_of: datetime | None = None
) -> pl.DataFrame:
    """Silver's `_near_duplicates` (episode_id, dedup_cluster); empty when near-duplicates are
    off or silver has none."""
    if not config.near_duplicates.enabled:
        return pl.DataFrame(schema=NEAR_DUPS)
    return stored.read(layout, "silver", NEAR_DUPS_TABLE, as_of, schema=NEAR_DUPS)


def refresh_splits(layout: Layout, config: SplitConfig, run_id: str) -> tuple[pl.DataFrame, bool]:
    """Assign and publish splits unless the published silver, the config and this code are as
    before; the splits table and whether it was rebuilt."""
    inputs = fingerprint(
        [
            stored.meta(layout, "silver", stored.INPUTS) or "no silver",
            json_part([config.salt, config.ratios, config.near_duplicates.record()]),
            engine_digest(),
        ]
    )
    if stored.meta(layout, "splits", stored.INPUTS) == inputs:
        return stored.read(layout, "splits", "splits"), False
    episodes = stored.read(layout, "silver", "episodes").select("episode_id", "group_id")
    near = stored_near_duplicates(layout, config)
    splits = assign_splits(episodes["group_id"], config, split_groups(episodes, near))
    meta = {stored.RUN: run_id, stored.INPUTS: inputs}
    stored.publish(layout, "splits", {"splits": splits}, meta)
    return splits, True
