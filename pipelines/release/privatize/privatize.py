"""What a release may contain: subject ids replaced by keyed pseudonyms wherever they appear
(columns, session ids, text, JSON), released text redacted, a ledger of what was replaced
(counts by kind and dataset, never values). Silver keeps the real ids; releases never do."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from itertools import islice
from typing import Any

import polars as pl

from pipelines.privacy.known_name_redaction import KIND, names_to_redact, redact_known_names_by_row
from pipelines.privacy.known_names import known_names
from pipelines.privacy.prefilter import id_gated
from pipelines.privacy.pseudonyms import IdReplacer, Pseudonymizer
from pipelines.privacy.redact import RedactionConfig, redaction_config_from
from pipelines.privacy.text_leaves import is_textual, put_rows, replace_strings, string_leaves
from pipelines.release.privatize.row_ledger import (
    COLUMN,
    ROW,
    leaf_rows,
    ledger_of,
    row_counts,
    row_leaves,
    touched_leaves,
    with_hits,
)
from pipelines.release.privatize.text_cleaner import TEXTS_PER_GATHERING, clean_texts
from pipelines.runtime.collector import without_cyclic_gc
from pipelines.sources.base import sha256_hex
from pipelines.splits.assign import human_participants

_SHA256_BLOCK = 64  # bytes: HMAC pads (or first hashes) its key to the block size


@dataclass(frozen=True)
class Privatized:
    datasets: dict[str, pl.DataFrame]
    ledger: dict[str, dict[str, int]]  # dataset -> kind -> replacements
    replace_ids: Callable[[list[str]], list[str]]  # each text with its subject ids replaced


def subject_ids(silver: Mapping[str, pl.DataFrame]) -> list[str]:
    """Real ids of human subjects (participants, decision humans, raters) as the sources write
    them."""
    return participant_subject_ids(human_participants(silver))


def participant_subject_ids(participants: pl.DataFrame) -> list[str]:
    """The real ids in `human_participants` rows (`<source>:<id>` → `<id>`)."""
    people = participants.get_column("participant_id").str.splitn(":", 2).struct.field("field_1")
    return sorted(set(people.drop_nulls().to_list()) - {""})


def keyed_hash(expr: pl.Expr, key: bytes) -> pl.Expr:
    """HMAC-SHA256 hex of a String expression under `key`, exactly `hmac.new(key, value,
    sha256).hexdigest()` (RFC 2104 written out over the native sha256; null stays null).

    Keyed, so the hash of a short prompt cannot be looked up in a dictionary of prompts."""
    block = (hashlib.sha256(key).digest() if len(key) > _SHA256_BLOCK else key).ljust(
        _SHA256_BLOCK, b"\0"
    )
    inner_pad = pl.lit(bytes(b ^ 0x36 for b in block), pl.Binary)
    outer_pad = pl.lit(bytes(b ^ 0x5C for b in block), pl.Binary)
    inner = sha256_hex(inner_pad + expr.cast(pl.Binary))
    return sha256_hex(outer_pad + inner.str.decode("hex"))


def _is_prompt_hash(column: str) -> bool:
    """`prompt_hash`, the pair builders' `chosen_prompt_hash` / `rejected_prompt_hash` and
    `dedup_cluster` (a hash of a normalized prompt, keyed as they are)."""
    return column in ("prompt_hash", "dedup_cluster") or column.endswith("_prompt_hash")


def text_columns(frame: pl.DataFrame) -> list[str]:
    """The columns of `frame` holding text, however nested (not the prompt hashes, keyed apart)."""
    return [c for c, t in frame.schema.items() if not _is_prompt_hash(c) and is_textual(t)]


def _is_id(column: str) -> bool:
    """Id columns (`episode_id`, `actor_id`, `turn_ids`, an RL step's `policy`) and labels: a known
    name in them is part of an id (`Worker+Ben`), replaced by the pseudonyms or kept as the id it
    is, not text."""
    return column.endswith(("_id", "_ids")) or column in ("split", "source", "policy")


def _row_episodes(frame: pl.DataFrame) -> pl.Series | None:
    """The silver episode of each row as built (the cleaned `episode_id` may hold pseudonyms): an
    agent's steps (`…@Worker+Ben`) come from the episode `source_episode_id` names."""
    present = [c for c in ("source_episode_id", "episode_id") if c in frame.columns]
    if not present:
        return None
    return frame.select(pl.coalesce(present).alias("episode_id")).to_series()


# Rows privatized at a time (estimated in-memory size): finding and replacing a slice's texts holds
# a few copies of them, so a dataset of large texts (a decision's context JSON) is done in slices.
SLICE_BYTES = 32 * 2**20


def row_slices(frame: pl.DataFrame, max_bytes: int) -> list[pl.DataFrame]:
    """`frame` in consecutive row slices of about `max_bytes` each (one slice when it is smaller);
    zero-copy."""
    parts = max(1, -(-frame.estimated_size() // max_bytes))
    rows = max(1, -(-frame.height // parts))
    return [frame.slice(start, rows) for start in range(0, frame.height, rows)] or [frame]


def _clean_frame(
    frame: pl.DataFrame,
    textual: list[str],
    key: bytes,
    cleaned: pl.DataFrame,
    names: pl.DataFrame,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """`frame` with its texts replaced by their cleaned versions and the names its episodes know
    (`names`: episode_id, name) redacted in its rows of those episodes, and its replacements per
    row (row_ledger.py: a text repeated n times counts n times). `cleaned`: value, cleaned, and
    one count column per kind. Done SLICE_BYTES of rows at a time: a row's privatized text and
    counts depend on that row alone."""
    frames, counts = [], [pl.DataFrame(schema={ROW: pl.UInt32})]
    start = 0
    for part in row_slices(frame, SLICE_BYTES):
        done, rows = _clean_slice(part, textual, key, cleaned, names)
        frames.append(done)
        counts.append(rows.with_columns((pl.col(ROW) + start).cast(pl.UInt32)))
        start += part.height
    counts = pl.concat(counts, how="diagonal")
    kinds = sorted(set(counts.columns) - {ROW}, key=lambda kind: (kind == KIND, kind))
    return pl.concat(frames), counts.select(ROW, *(pl.col(k).fill_null(0) for k in kinds))


def _clean_slice(
    frame: pl.DataFrame,
    textual: list[str],
    key: bytes,
    cleaned: pl.DataFrame,
    names: pl.DataFrame,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """`_clean_frame` of one slice of rows."""
    leaves = row_leaves(frame, textual)
    rows = leaf_rows(leaves, frame.height)
    leaves = touched_leaves(leaves, cleaned)
    counts = row_counts(leaves, cleaned, rows)
    by_column = changes_by_column(leaves, cleaned)
    del leaves  # before the replaced columns are made
    changes = [
        _replaced(frame, c, mine)
        for number, c in enumerate(textual)
        if (mine := by_column.get(number)) is not None
    ]
    changes += [keyed_hash(pl.col(c), key).alias(c) for c in frame.columns if _is_prompt_hash(c)]
    episodes = _row_episodes(frame)
    frame = frame.with_columns(changes)
    if episodes is not None and names.height:
        free_text = [c for c in textual if not _is_id(c)]
        frame, known = redact_known_names_by_row(frame, free_text, episodes, names)
        if known.height:
            counts = with_hits(counts, known.rename({"hits": KIND}))
    return frame, counts


def changes_by_column(leaves: pl.DataFrame, cleaned: pl.DataFrame) -> dict[int, pl.DataFrame]:
    """column -> row, value, cleaned of each of that column's `leaves` (column, row, value:
    `row_leaves`) whose text `cleaned` (value, cleaned, …) changes, one per leaf; a column with
    none is left out.

    A column's texts are replaced by its own changes alone: replacing by every change of the
    slice hashed all of them again for each column, most of which (ids, labels) hold none."""
    changed = cleaned.filter(pl.col("cleaned") != pl.col("value")).select("value", "cleaned")
    found = leaves.select(COLUMN, ROW, "value").join(changed, on="value", how="inner")
    return {
        number: mine
        for (number,), mine in found.partition_by(COLUMN, as_dict=True, include_key=False).items()
    }


def _replaced(frame: pl.DataFrame, column: str, changes: pl.DataFrame) -> pl.Series | pl.Expr:
    """`column` of `frame` with the texts of `changes` (row, value, cleaned: its leaves that
    change) replaced. A String column holds one leaf a row: its changed rows are put in place,
    and its other texts (an id or label in every row) are not hashed to be looked up."""
    dtype = frame.schema[column]
    if dtype == pl.String:
        changes = changes.sort(ROW)
        return put_rows(frame.get_column(column), changes.get_column(ROW), changes["cleaned"])
    changes = changes.unique(subset="value")
    return replace_strings(pl.col(column), dtype, changes["value"], changes["cleaned"]).alias(
        column
    )


def _as_frame(cleaned: dict[str, tuple[str, dict[str, int]]]) -> pl.DataFrame:
    kinds = sorted({kind for _, counts in cleaned.values() for kind in counts})
    results = list(cleaned.values())
    return pl.DataFrame(
        {
            "value": list(cleaned),
            "cleaned": [text for text, _ in results],
            **{kind: [counts.get(kind, 0) for _, counts in results] for kind in kinds},
        },
        schema={"value": pl.String, "cleaned": pl.String, **dict.fromkeys(kinds, pl.Int64)},
    )


@dataclass(frozen=True)
class Prepared:
    """Datasets with their texts gathered and gated, not yet cleaned (`prepare`)."""

    datasets: dict[str, pl.DataFrame]
    textual: dict[str, list[str]]  # each dataset's text columns
    candidates: list[tuple[str, frozenset[str]]]
    names: pl.DataFrame  # episode_id, name: the names to redact per episode (known_names.py)


@lru_cache(maxsize=2)
def id_replacer(key: bytes, ids: tuple[str, ...]) -> IdReplacer:
    """The replacer of `ids` under `key`, made once per release, not once per partition (its
    pseudonyms are one HMAC per id)."""
    pseudonyms = Pseudonymizer(key)
    return IdReplacer({real: pseudonyms.pseudonym("person", real) for real in ids})


def prepare(
    datasets: dict[str, pl.DataFrame],
    ids: list[str],
    redaction: RedactionConfig,
    names: pl.DataFrame | None = None,
) -> Prepared:
    """The distinct strings of all datasets, gated together: the candidates `clean_texts` takes.
    `names`: the names the datasets' episodes know (`known_names`), redacted when the kind
    `known_name` is on."""
    textual = {name: text_columns(frame) for name, frame in datasets.items()}
    # one distinct of every dataset's strings: a distinct per dataset would hold the texts the
    # datasets share (a decision's context, an RL step's observation) once per dataset
    distinct = pl.concat(
        [pl.Series("value", [], dtype=pl.String)]
        + [string_leaves(frame, textual[name]) for name, frame in datasets.items()]
    ).unique()
    candidates = list(id_gated(distinct, ids, redaction))
    names = names_to_redact(names, redaction.kinds)
    return Prepared(dict(datasets), textual, candidates, names)  # finish_each empties it


# Texts given to `clean_texts` at a time: it holds each text's Python strings, tuples and dict
# entries (~1 KB per text) until it returns, and the largest release partition of a 1 GB corpus has
# ~600 000 candidate texts. Enough for the redactor's worker processes (text_cleaner.py).
SLICE_TEXTS = 4 * TEXTS_PER_GATHERING


# The collector paused: each candidate text allocates a few tuples and dicts (in no cycle), which
# set it off again and again, each pass walking every container made so far.
@without_cyclic_gc
def cleaned_frame(
    candidates: list[tuple[str, frozenset[str]]],
    replacer: IdReplacer,
    redaction: RedactionConfig,
    workers: int,
) -> pl.DataFrame:
    """value, cleaned and one count column per kind of every candidate (of one or of several
    `Prepared`: a caller may clean many partitions' candidates in one call, so that the redactor's
    worker processes see enough texts to be worth starting). Cleaned SLICE_TEXTS at a time."""
    distinct = iter(dict(candidates).items())  # a text of several partitions is cleaned once
    frames = []
    while batch := list(islice(distinct, SLICE_TEXTS)):
        frames.append(_as_frame(clean_texts(batch, replacer, redaction, workers)))
    if len(frames) < 2:
        return frames[0] if frames else _as_frame({})
    kinds = sorted({c for frame in frames for c in frame.columns} - {"value", "cleaned"})
    return pl.concat(frames, how="diagonal").select(
        "value", "cleaned", *(pl.col(kind).fill_null(0) for kind in kinds)
    )


def finish_each(
    prepared: Prepared, key: bytes, cleaned: pl.DataFrame
) -> Iterator[tuple[str, pl.DataFrame, pl.DataFrame]]:
    """Each dataset with its texts replaced by `cleaned` (which may hold other texts too), and its
    replacements per row (row_ledger.py), one at a time. Takes each dataset out of `prepared` as it
    goes: a caller that stores and lets go of each holds one dataset's rows twice, not every
    dataset's (at 1 GB the largest partition's datasets are ~270 MB)."""
    for name in list(prepared.datasets):
        frame, ledger = _clean_frame(
            prepared.datasets.pop(name), prepared.textual[name], key, cleaned, prepared.names
        )
        yield name, frame, ledger
        del frame  # not held while the next one is made


def finish(
    prepared: Prepared, key: bytes, cleaned: pl.DataFrame
) -> tuple[dict[str, pl.DataFrame], dict[str, dict[str, int]]]:
    """The datasets with their texts replaced by `cleaned` and their ledger (`finish_each`:
    empties `prepared.datasets`)."""
    out, ledger = {}, {}
    for name, frame, counts in finish_each(prepared, key, cleaned):
        out[name], ledger[name] = frame, ledger_of(counts)
    return out, ledger


def privatize(
    datasets: dict[str, pl.DataFrame],
    silver: Mapping[str, pl.DataFrame],
    key: bytes,
    redaction: RedactionConfig | Mapping[str, Any],
    workers: int = 1,
    ids: list[str] | None = None,
) -> Privatized:
    """Pseudonymize every subject id and redact every text value in every dataset (`redaction`:
    `settings.privacy.redaction`, or a parsed turnlake.toml holding one). The distinct
    strings of all datasets are gated together; only those a prefilter gate passes reach Python,
    and the names each episode of `silver` knows are redacted in its rows (`known_names`);
    each once, with only the detectors whose gate they pass; with `workers` > 1 and many texts,
    redaction runs in worker processes. `ids`: the subject ids when the caller already has them
    (`subject_ids` of the whole of silver: a text in one partition may name a subject of
    another)."""
    ids = subject_ids(silver) if ids is None else ids
    replacer = id_replacer(key, tuple(ids))
    if not isinstance(redaction, RedactionConfig):
        redaction = redaction_config_from(redaction)
    prepared = prepare(datasets, ids, redaction, known_names(dict(silver)))
    cleaned = cleaned_frame(prepared.candidates, replacer, redaction, workers)
    out, ledger = finish(prepared, key, cleaned)
    return Privatized(out, ledger, replacer.replace_many)
