"""A release partition's episodes cut into chunks, so that a partition touched by new data (a giant
group that every night's data joins) rebuilds and re-privatizes only the chunks whose rows changed.

What each dataset row depends on (pipelines/exports/datasets):
- per episode: sft, kto and the decisions dataset (a turn or decision with its episode's earlier
  turns, its rewards, feedback and content-addressed context), and the preference pairs of kind
  correction, override, sibling_rank and hh_rlhf; rl_steps of study and decision sessions (an RL
  episode is one session, or one actor of it);
- per Social RL run: its rl_steps and coach steps (an RL episode is an agent over every round,
  and each round is an episode);
- per group: the rated_alternatives preference pairs (best against worst rated completion of one
  prompt text among all episodes of a group), built apart from all chunks' rated rows
  (units.py);
- per group's split row: every row's split; global: the duplicate-prompt drop (key frames).

So a chunk is a set of atoms (an episode; every episode of a Social RL run), and the datasets of a
partition are the union of its chunks' datasets and its pairs. Chunks are sticky: an atom keeps
the chunk it was first put in (the partition's previous chunk map), new atoms fill new chunks in
order of their start, so a night's new episodes make new chunks and leave the old ones as they
were. How atoms are cut into chunks never changes a row, only what is reused: a chunk's entry is
keyed by the digest of its own rows. A partition where a row refers to a turn or decision of
another atom (no source writes one today) is built as one chunk.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from pipelines.partitions.assign import PARTITION
from pipelines.partitions.rows import digests
from pipelines.release.store import part_cache

ATOM, CHUNK = "_atom", "_chunk"
# Silver rows a new chunk holds (an atom bigger than this is a chunk alone); a partition of at most
# this many is built whole. A chunk costs a `build_datasets` call and store entries however small
# it is; at 1 GB of raw logs most partitions hold ~50 000 rows, the two giant ones ~250 000.
CHUNK_ROWS = 64_000
ATOMS = "_atoms"  # the frame of a partition's index entry: atom → chunk
_TURN_REFERENCES = ("revises_turn_id", "corrects_turn_id")


def atoms(episodes: pl.DataFrame) -> pl.DataFrame:
    """episode_id, ATOM: an episode's atom (a Social RL run's, as rl_steps names the run)."""
    run = pl.col("attributes").str.json_path_match("$.run_dir").fill_null(pl.col("episode_id"))
    social = pl.col("source") == "social_rl"
    atom = pl.when(social).then(pl.lit("run\x1f") + run).otherwise(pl.col("episode_id"))
    return episodes.select("episode_id", atom.alias(ATOM))


def _episode_of(frame: pl.DataFrame, key: str) -> pl.DataFrame:
    return frame.select(pl.col(key).alias("_ref"), pl.col("episode_id").alias("_ref_episode"))


def crosses(
    silver: dict[str, pl.DataFrame], gold: dict[str, pl.DataFrame], of: pl.DataFrame
) -> bool:
    """Whether a row the builders join on a turn or decision id names one of another atom (`of`:
    `atoms`)."""
    turns, decisions = silver["turns"], silver["decisions"]
    refs = [decisions.select("episode_id", _ref="turn_id")]
    attributes = turns.filter(pl.col("attributes").str.contains("_turn_id", literal=True))
    for name in _TURN_REFERENCES:
        ref = pl.col("attributes").str.json_path_match(f"$.{name}")
        refs.append(attributes.select("episode_id", _ref=ref))
    rewards = gold.get("turn_rewards")
    if rewards is not None:
        refs += [rewards.select("episode_id", _ref=c) for c in ("turn_id", "decision_id")]
    refs.append(silver["feedback"].select("episode_id", _ref="decision_id"))
    owners = pl.concat([_episode_of(turns, "turn_id"), _episode_of(decisions, "decision_id")])
    found = pl.concat(refs).drop_nulls("_ref").join(owners, on="_ref", how="inner")
    atom_of = of.select("episode_id", ATOM)
    found = found.join(atom_of, on="episode_id", how="left").join(
        atom_of.rename({"episode_id": "_ref_episode", ATOM: "_ref_atom"}),
        on="_ref_episode",
        how="left",
    )
    return found.filter(pl.col(ATOM).ne_missing(pl.col("_ref_atom"))).height > 0


def assign(
    of: pl.DataFrame, episodes: pl.DataFrame, rows: pl.DataFrame, previous: pl.DataFrame | None
) -> pl.DataFrame:
    """ATOM → CHUNK: an atom of `previous` keeps its chunk; new atoms, in order of their first
    start, fill new chunks of about CHUNK_ROWS silver rows (`rows`: episode_id, n)."""
    starts = of.join(episodes.select("episode_id", "started_at"), on="episode_id")
    sized = (
        starts.join(rows, on="episode_id", how="left")
        .group_by(ATOM)
        .agg(pl.col("started_at").min(), pl.col("n").fill_null(0).sum() + 1)
    )
    previous = (
        previous
        if previous is not None
        else pl.DataFrame(schema={ATOM: pl.String, CHUNK: pl.Int64})
    )
    known = sized.join(previous, on=ATOM, how="inner").select(ATOM, CHUNK)
    new = sized.join(previous, on=ATOM, how="anti").sort("started_at", ATOM, nulls_last=True)
    first = int(previous.get_column(CHUNK).max()) + 1 if previous.height else 0  # type: ignore[arg-type]
    before = pl.col("n").cum_sum() - pl.col("n")
    new = new.select(ATOM, (first + before // CHUNK_ROWS).cast(pl.Int64).alias(CHUNK))
    return pl.concat([known, new]).sort(CHUNK, ATOM)


def one_chunk(of: pl.DataFrame) -> pl.DataFrame:
    return of.select(ATOM).unique().sort(ATOM).with_columns(pl.lit(0, pl.Int64).alias(CHUNK))


def split(
    tables: dict[str, pl.DataFrame], chunk_of: pl.DataFrame, keys: dict[str, str]
) -> dict[int, dict[str, pl.DataFrame]]:
    """Each chunk's rows of the episode-keyed tables (`keys`: table → its key column; a table
    keyed otherwise, by group, is given whole to every chunk), in the order read."""
    chunks = chunk_of.get_column(CHUNK).unique().sort().to_list()
    out: dict[int, dict[str, pl.DataFrame]] = {c: {} for c in chunks}
    for name, frame in tables.items():
        if keys.get(name) != "episode_id":
            for c in chunks:
                out[c][name] = frame
            continue
        tagged = frame.join(chunk_of, on="episode_id", how="left", maintain_order="left")
        parts = tagged.partition_by(CHUNK, as_dict=True, maintain_order=True)
        empty = frame.head(0)
        for c in chunks:
            out[c][name] = parts[(c,)].drop(CHUNK) if (c,) in parts else empty
    return out


def episode_chunks(of: pl.DataFrame, chunk_of: pl.DataFrame) -> pl.DataFrame:
    """episode_id → CHUNK."""
    return of.join(chunk_of, on=ATOM, how="inner").select("episode_id", CHUNK)


def digest(tables: dict[str, pl.DataFrame]) -> str:
    """Digest of a chunk's rows in every table (order-independent, as a partition's)."""
    tagged = {
        name: frame.with_columns(pl.lit("chunk").alias(PARTITION)) for name, frame in tables.items()
    }
    found = digests(tagged)
    return found.get_column("digest").item() if found.height else ""


def index_prefix(partition: str) -> str:
    return f"chunks-{partition}-"


def previous_map(root: Path | None, partition: str) -> pl.DataFrame | None:
    """The chunk map of the newest index entry of `partition` in the store (the last release's)."""
    if root is None or not root.is_dir():
        return None
    entries = [
        e for e in root.glob(f"{index_prefix(partition)}*") if (e / part_cache.META).exists()
    ]
    if not entries:
        return None
    newest = max(entries, key=lambda e: ((e / part_cache.META).stat().st_mtime_ns, e.name))
    _, frames = part_cache.load(root, newest.name, [ATOMS])
    return frames.get(ATOMS)
