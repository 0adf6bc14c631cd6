"""Decontamination of a release (`[release] decontaminate`, docs/concepts/decontamination.md): the
rows whose user text overlaps a prompt of an evaluation set (pipelines/similarity/decontaminate.py)
leave the train and validation splits. It is a keep rule like the duplicate-prompt rule: it clears
`keep` in the global key frame; a partition it drops rows from keeps its privatized entry (the
release leaves the dropped rows out as it reads it: build/parts.py).

Test rows are kept: the test split is held out of training already, and a release's test split is
the evaluation of its own data; dropping its rows that resemble someone else's benchmark would
only shrink it (open-instruct decontaminates training sets only)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from pipelines.config.release import Decontamination
from pipelines.config.settings import Settings
from pipelines.partitions.assign import PARTITION
from pipelines.release.store import part_cache
from pipelines.similarity.decontaminate import contaminated
from pipelines.similarity.eval_sets import PROMPTS_SCHEMA, file_sha256, read_eval_set
from pipelines.similarity.minhash import MinHashParams
from pipelines.storage.engine import engine_digest
from pipelines.storage.fingerprint import fingerprint, json_part

TRAINED = ("train", "validation")
# Each dataset's text its model is prompted with: (column, chat messages of which only the
# user's count). rl_steps' observation and stepwise's prompt are plain text, all of it the input.
USER_TEXT = {
    "sft": ("messages", True),
    "preference": ("prompt", True),
    "kto": ("prompt", True),
    "decisions": ("prompt", True),
    "stepwise": ("prompt", False),
    "rl_steps": ("observation", False),
}
TEXTS_SCHEMA = pl.Schema({"prompt_hash": pl.String, "text": pl.String})
HITS_SCHEMA = pl.Schema({"prompt_hash": pl.String, "eval_set": pl.String})
HITS = "hits"  # a unit's decontamination entry: its prompt hashes that overlap an evaluation set


@dataclass(frozen=True)
class EvalSets:
    prompts: pl.DataFrame  # eval_set (the path as configured), prompt
    files: list[dict]  # {"file": as configured, "sha256": of its bytes}, in config order
    params: Decontamination

    def record(self) -> dict:
        """What the release config (and so the content hash) holds: each set's sha256, so that
        a changed evaluation file makes another release, and the parameters."""
        return {"sets": self.files, "params": self.params.model_dump()}


def proof_part(sets: EvalSets | None, left: dict[str, dict[str, int]]) -> dict:
    """The split proof's `decontamination` (none without evaluation sets): the record and the rows
    that left per evaluation set and dataset."""
    return {} if sets is None else {"decontamination": sets.record() | {"rows_left": left}}


def config_part(proof: dict) -> dict:
    """The release config's `decontamination` (none without evaluation sets, so that a release
    without them hashes as before they existed): the proof's record without its counts."""
    found = proof.get("decontamination")
    if not found:
        return {}
    return {"decontamination": {k: v for k, v in found.items() if k != "rows_left"}}


def eval_path(settings: Settings, configured: str) -> Path:
    """A `decontaminate` entry's file: relative to turnlake.toml's folder (or the working folder
    without one)."""
    base = settings.config_path.parent if settings.config_path else Path()
    return base / configured


def eval_sets(settings: Settings) -> EvalSets | None:
    """The evaluation sets of `settings`, read (None: none configured). Raises `EvalSetError`
    naming a file that cannot be read."""
    if not settings.release_decontaminate:
        return None
    files, prompts = [], [pl.DataFrame(schema=PROMPTS_SCHEMA)]
    for configured in settings.release_decontaminate:
        path = eval_path(settings, configured)
        files.append({"file": configured, "sha256": file_sha256(path)})
        prompts.append(read_eval_set(path, configured))
    return EvalSets(pl.concat(prompts), files, settings.release_decontamination)


def eval_files_digest(settings: Settings) -> list[str]:
    """Each evaluation file's sha256 ("unreadable" for one that cannot be read): what a build
    record compares, so an edited evaluation set is a change to build."""
    out = []
    for configured in settings.release_decontaminate:
        try:
            out.append(file_sha256(eval_path(settings, configured)))
        except ValueError:
            out.append("unreadable")
    return out


def user_texts(frame: pl.DataFrame, dataset: str) -> pl.DataFrame:
    """(prompt_hash, text) of each user text of a dataset's train and validation rows (a chat's
    user messages each on its own, as open-instruct indexes user turns)."""
    column, chat = USER_TEXT[dataset]
    rows = frame.filter(pl.col("split").is_in(TRAINED))
    if chat:
        messages = rows.select("prompt_hash", m=pl.col(column)).explode("m").unnest("m")
        texts = messages.filter(pl.col("role") == "user").select("prompt_hash", text="content")
    else:
        texts = rows.select("prompt_hash", text=pl.col(column))
    return texts.drop_nulls().unique().cast(TEXTS_SCHEMA)


def _unit_texts(root: Path | None, entry: str, held: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """(prompt_hash, text) of one unit's datasets as built (from the store, only the columns read;
    or the frames held when the store is off), unique."""
    wanted = ["split", "prompt_hash"]
    parts = [pl.DataFrame(schema=TEXTS_SCHEMA)]
    for dataset, (column, _) in USER_TEXT.items():
        frame = held.get(dataset)
        path = None if root is None else part_cache.frame_path(root, entry, dataset)
        if frame is None and path is not None and path.exists():
            frame = pl.scan_parquet(path).select(*wanted, column).collect()
        if frame is not None and frame.height:
            parts.append(user_texts(frame.select(*wanted, column), dataset))
    return pl.concat(parts).unique()


def matched(texts: pl.DataFrame, sets: EvalSets) -> pl.DataFrame:
    """(prompt_hash, eval_set), unique: each prompt hash with a user text (`texts`: prompt_hash,
    text) that overlaps a prompt of `sets`, and that prompt's set."""
    distinct = texts.select("text").unique().with_row_index("text_id").cast({"text_id": pl.Int64})
    prompts = sets.prompts.with_row_index("prompt_id").cast({"prompt_id": pl.Int64})
    p = sets.params
    minhash = MinHashParams(p.shingle_size, p.threshold, p.num_perm, p.bands)
    matches = contaminated(distinct, prompts, p.ngram_size, p.ngram_share, minhash)
    return (
        matches.join(distinct, on="text_id")
        .join(prompts.select("prompt_id", "eval_set"), on="prompt_id")
        .join(texts, on="text")
        .select("prompt_hash", "eval_set")
        .unique()
        .cast(HITS_SCHEMA)
    )


def matched_units(
    root: Path | None,
    built: dict[str, str],
    held: dict[str, dict[str, pl.DataFrame]],
    sets: EvalSets,
) -> tuple[pl.DataFrame, list[str]]:
    """(`matched` over every unit's user texts, the store entries holding each unit's). A unit's
    matches are kept in the store under its built entry, the sets' record and the code: a release
    after new data matches only the texts of the units that changed."""
    record = fingerprint([json_part(sets.record()), engine_digest()])
    found, entries, pending = [pl.DataFrame(schema=HITS_SCHEMA)], [], []
    for unit, entry in built.items():
        key = "decontaminated-" + fingerprint([entry, record])[:40]
        entries.append(key)
        _, frames = part_cache.load(root, key, [HITS])
        if HITS in frames:
            found.append(frames[HITS])
        else:
            pending.append((unit, entry, key))
    if pending:
        texts = [
            _unit_texts(root, entry, held.get(unit) or {}).with_columns(_key=pl.lit(key))
            for unit, entry, key in pending
        ]
        everything = pl.concat(texts)
        hits = matched(everything.select("prompt_hash", "text").unique(), sets)
        own = everything.select("_key", "prompt_hash").unique().join(hits, on="prompt_hash")
        for _, _, key in pending:
            mine = own.filter(pl.col("_key") == key).drop("_key").sort(pl.all())
            part_cache.save(root, key, {}, {HITS: mine})
        found.append(hits)
    return pl.concat(found).unique(), entries


def drop_matched(
    keys: pl.DataFrame, hits: pl.DataFrame, sets: EvalSets
) -> tuple[pl.DataFrame, dict[str, dict[str, int]]]:
    """`keys` (with `keep`) with `keep` cleared on each train and validation row whose prompt
    hash `hits` holds (`matched`), and the rows that left per evaluation set and dataset (a row
    overlapping two sets counts in both)."""
    leaving = pl.col("keep") & pl.col("split").is_in(TRAINED)
    row = ["dataset", "row", PARTITION]  # a row's place: its dataset's row in its partition
    left = keys.filter(leaving).join(hits, on="prompt_hash").select(*row, "eval_set")
    counts: dict[str, dict[str, int]] = {f["file"]: {} for f in sets.files}
    for eval_set, dataset, n in left.group_by("eval_set", "dataset").len().sort(pl.all()).rows():
        counts[eval_set][dataset] = n
    dirty = left.select(row).unique().with_columns(_dirty=pl.lit(True))
    out = keys.join(dirty, on=row, how="left", maintain_order="left")
    return out.with_columns(keep=pl.col("keep") & pl.col("_dirty").is_null()).drop("_dirty"), counts
