"""Copies of one session → the copy silver keeps, and the copies that disagree with it.

The same session may sit in its own file, in the master JSONL and in a completed/exit participant
file. The kept copy is the most complete one: most history entries, then most IQL steps, then a
copy that names its participant, then copy kind session_file > master > completed > exit, then
file path and locator (so ties resolve the same way every run).

Every other copy is compared with the kept one on its content (character, conversation type,
strategy, turn_count, history, iql_data, created_at, ended_at, scenario, unknown fields) and on
its participant (when both name one):
- identical → nothing to report (the same record arriving twice is stored once);
- an earlier snapshot (the admin "Save Active Sessions" button, or a save before the last
  exchange): its history and IQL steps are a strict prefix of the kept copy's and it differs
  elsewhere only in turn_count / ended_at → nothing to report, its content is all in the kept copy;
- anything else → a silver quarantine row `duplicate_conflict` on that copy, naming the kept copy,
  why it was kept, and what differs. The kept copy still wins by the rule above.
"""

from __future__ import annotations

from itertools import groupby
from operator import itemgetter
from typing import Any

import polars as pl

from pipelines.schemas import silver_schema
from pipelines.sources.base import dumps
from pipelines.transforms.polars_engine import TRANSFORM_ENGINE
from pipelines.transforms.study.common import SOURCE

COPY_KIND_PRIORITY = {"session_file": 0, "master": 1, "completed": 2, "exit": 3}
UUID_PREFIX = r"^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})_"
CONTENT = (
    "character",
    "conversation_type",
    "persuasion_strategy",
    "turn_count",
    "history",
    "iql",
    "created_at",
    "ended_at",
    "scenario",
    "extra",
)
# A shorter save of the same session carries the counters of the moment it was saved.
SNAPSHOT_MAY_DIFFER = frozenset({"turn_count", "ended_at"})
_RANK_KEYS = ["n_history", "n_iql", "has_participant", "kind_rank", "file", "locator"]


def rank_copies(sessions: pl.LazyFrame) -> pl.LazyFrame:
    """Every copy with its `copy_rank` within its session (0 = the kept copy)."""
    return (
        sessions.with_columns(
            n_history=pl.col("history").list.len(),
            n_iql=pl.col("iql").list.len(),
            has_participant=pl.col("participant_id").is_not_null(),
            kind_rank=pl.col("copy_kind").replace_strict(COPY_KIND_PRIORITY, return_dtype=pl.Int64),
        )
        .sort(
            ["session_id", *_RANK_KEYS], descending=[False, True, True, True, False, False, False]
        )
        .with_columns(copy_rank=pl.int_range(pl.len()).over("session_id"))
    )


def choose_copies(ranked: pl.LazyFrame) -> pl.LazyFrame:
    """One row per session_id: the kept copy, with `participant`, `copies`, `episode_id`.

    The participant is linked from ANY copy (first non-null in rank order); failing that, from the
    session id's prefix before the first `_` when it is a UUID; failing that, it stays null and
    the session id itself is the episode's group."""
    linked = ranked.group_by("session_id").agg(
        copies=pl.len().cast(pl.Int64),
        any_participant=pl.col("participant_id").drop_nulls().first(),
    )
    chosen = ranked.filter(pl.col("copy_rank") == 0)
    return chosen.join(linked, on="session_id", how="left").with_columns(
        episode_id=pl.concat_str([pl.lit(f"{SOURCE}:"), pl.col("session_id")]),
        participant=pl.coalesce(
            pl.col("any_participant"), pl.col("session_id").str.extract(UUID_PREFIX, 1)
        ),
    )


def copy_conflicts(ranked: pl.LazyFrame, excerpt_chars: int) -> pl.DataFrame:
    """Silver quarantine rows (`duplicate_conflict`) for copies that disagree with the kept one."""
    # Most copies are identical to the kept one or plainly an earlier snapshot of it (compared in
    # the plan, exactly): only the sessions of the other copies are compared field by field in
    # Python, for the message.
    rows = (
        ranked.join(_unexplained(ranked), on="session_id", how="semi")
        .sort("session_id", "copy_rank")
        .collect(engine=TRANSFORM_ENGINE)
    )
    out = []
    # rows sorted by session: one conversion to dicts, then each session's copies in rank order
    for _, group in groupby(rows.to_dicts(), key=itemgetter("session_id")):
        copies = list(group)
        kept = copies[0]
        linked = next(
            (c["participant_id"] for c in copies if c["participant_id"] is not None), None
        )
        for other in copies[1:]:
            differs = differences(kept, other, linked)
            if differs and not is_earlier_snapshot(kept, other, differs):
                out.append(_conflict_row(kept, other, differs, len(copies), excerpt_chars))
    # The silver quarantine contract without run_id (silver stamps the run that read the record).
    schema = {k: v for k, v in silver_schema("quarantine").items() if k != "run_id"}
    return pl.DataFrame(out, schema=schema, orient="row")


def _unexplained(ranked: pl.LazyFrame) -> pl.LazyFrame:
    """The sessions with a copy that may disagree with the kept one. Not those whose every other
    copy hashes as the kept one and names no other participant (most), nor those whose other
    copies `is_earlier_snapshot` would let pass whatever `differences` finds: no other
    participant, shorter, history and IQL steps a prefix of the kept copy's, every other field the
    kept copy's but the counters a save may differ in (`==` as Python's: nulls equal)."""
    linked = pl.col("participant_id").drop_nulls().first().over("session_id")
    keyed = ranked.with_columns(_key=pl.struct(list(CONTENT)).hash()).with_columns(
        _kept_key=pl.col("_key").first().over("session_id"), _linked=linked
    )
    other_participant = (pl.col("participant_id") != pl.col("_linked")).fill_null(False)
    suspects = keyed.filter(
        (pl.col("copy_rank") > 0) & ((pl.col("_key") != pl.col("_kept_key")) | other_participant)
    )
    kept_columns = [*CONTENT, "n_history", "n_iql"]
    kept = ranked.filter(pl.col("copy_rank") == 0).select(
        "session_id", *(pl.col(c).alias(f"kept_{c}") for c in kept_columns)
    )
    fixed = [f for f in CONTENT if f not in SNAPSHOT_MAY_DIFFER | {"history", "iql"}]
    snapshot = pl.all_horizontal(
        (pl.col("n_history") < pl.col("kept_n_history")) | (pl.col("n_iql") < pl.col("kept_n_iql")),
        pl.col("kept_history").list.head(pl.col("n_history")).eq_missing(pl.col("history")),
        pl.col("kept_iql").list.head(pl.col("n_iql")).eq_missing(pl.col("iql")),
        *(pl.col(f).eq_missing(pl.col(f"kept_{f}")) for f in fixed),
    )
    return (
        suspects.join(kept, on="session_id")
        .filter(~(~other_participant & snapshot).fill_null(False))
        .select("session_id")
        .unique()
    )


def differences(kept: dict[str, Any], other: dict[str, Any], participant: str | None) -> list[str]:
    """What `other` says differently from `kept`, field by field (first differing entry of a list);
    `participant` is the one the session is linked to (a copy that names another one disagrees)."""
    out = []
    for field in CONTENT:
        if field == "history":
            out += _list_difference(
                "history", kept["history"], other["history"], lambda i, _e: f"history[{i}]"
            )
        elif field == "iql":
            out += _list_difference(
                "iql_data", kept["iql"], other["iql"], lambda _i, e: f"iql_data turn {e['turn']}"
            )
        elif kept[field] != other[field]:
            out.append(field)
    if other["participant_id"] is not None and other["participant_id"] != participant:
        out.append("participant_id")
    return out


def is_earlier_snapshot(kept: dict[str, Any], other: dict[str, Any], differs: list[str]) -> bool:
    shorter = len(other["history"]) < len(kept["history"]) or len(other["iql"]) < len(kept["iql"])
    prefix = (
        other["history"] == kept["history"][: len(other["history"])]
        and other["iql"] == kept["iql"][: len(other["iql"])]
    )
    return (
        shorter
        and prefix
        and all(d in SNAPSHOT_MAY_DIFFER or d.startswith(("history", "iql_data")) for d in differs)
    )


def _list_difference(name: str, kept: list, other: list, label) -> list[str]:
    for i, (a, b) in enumerate(zip(kept, other, strict=False)):
        if a != b:
            fields = sorted(k for k in a if a.get(k) != b.get(k))
            return [f"{label(i, b)} ({', '.join(fields)})"]
    if len(kept) != len(other):
        return [f"{name} ({len(other)} vs {len(kept)} entries)"]
    return []


def _why_kept(kept: dict[str, Any], other: dict[str, Any]) -> str:
    if kept["n_history"] != other["n_history"]:
        return f"it has more history entries ({kept['n_history']} vs {other['n_history']})"
    if kept["n_iql"] != other["n_iql"]:
        return f"it has more IQL steps ({kept['n_iql']} vs {other['n_iql']})"
    if kept["has_participant"] != other["has_participant"]:
        return "it names its participant"
    if kept["kind_rank"] != other["kind_rank"]:
        return "its kind ranks first (session_file > master > completed > exit)"
    return "it comes first in file path order"


def _conflict_row(
    kept: dict, other: dict, differs: list[str], n_copies: int, excerpt_chars: int
) -> dict:
    message = (
        f"session {other['session_id']} has {n_copies} copies that disagree: this "
        f"{other['copy_kind']} copy "
        f"differs from the kept {kept['copy_kind']} copy in {kept['file']} at {kept['locator']} in "
        f"{'; '.join(differs)}; kept that copy because {_why_kept(kept, other)}"
    )
    raw = dumps(
        {
            "session_id": other["session_id"],
            "participant_id": other["participant_id"],
            **{field: other[field] for field in CONTENT},
        }
    )
    return {
        "source": SOURCE,
        "file": other["file"],
        "locator": other["locator"],
        "error_kind": "duplicate_conflict",
        "message": message,
        "raw": raw[:excerpt_chars],
        "stage": "silver",
    }
