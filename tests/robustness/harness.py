"""What the robustness suite asserts about every adapter call, and the raw-file kinds it fuzzes.

`parse` calls `adapter.parse_file` directly (never ingest's `_safe_parse`, which would hide an
adapter exception as an `unreadable` row): any exception fails the test.
"""

from __future__ import annotations

import copy
import gzip
import json
import sqlite3
import zlib
from collections import defaultdict
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import orjson
import polars as pl

from pipelines.config.settings import Limits, Settings
from pipelines.schemas import polars_schema
from pipelines.schemas.bronze import bronze_models
from pipelines.sources import adapter
from pipelines.sources.base import ERROR_KINDS, ParseResult, RawFile, RecordError
from pipelines.sources.jsonio import loads_record, split_json_units

CLEAN = Path(__file__).resolve().parents[1] / "fixtures" / "clean"
SETTINGS = Settings()
# A quarantine excerpt is capped at raw_excerpt_chars plus a short "… [N more chars]" suffix.
EXCERPT_SLACK = 40


@dataclass(frozen=True)
class Kind:
    """One kind of raw file an adapter reads, seeded by a clean fixture file of that kind."""

    name: str
    source: str
    rel_path: str
    shape: str  # "jsonl" (one record per unit), "json" (whole-file document) or "sqlite"

    @property
    def file(self) -> RawFile:
        return RawFile(self.source, CLEAN / self.rel_path, self.rel_path)

    @property
    def seed(self) -> bytes:
        return _read(self.rel_path)

    @property
    def active(self) -> bool:
        return self.source == "scenario" and self.rel_path.startswith("scenarios/active/")

    def __str__(self) -> str:  # readable pytest ids and Hypothesis reports
        return self.name


@cache
def _read(rel_path: str) -> bytes:
    return (CLEAN / rel_path).read_bytes()


KINDS: tuple[Kind, ...] = (
    Kind(
        "scenario_completed",
        "scenario",
        "scenarios/completed/SCENARIO-2025-001/moderator_dialog.jsonl",
        "jsonl",
    ),
    Kind(
        "scenario_active",
        "scenario",
        "scenarios/active/SCENARIO-2025-002/moderator_dialog.jsonl",
        "jsonl",
    ),
    Kind(
        "study_session_file",
        "study",
        "survey_responses/conversations/0f8e3a52-6c1d-4b7e-9a20-3d5b8c7e1f44_niki_1767943131.json",
        "json",
    ),
    Kind(
        "study_master", "study", "survey_responses/conversations/all_conversations.jsonl", "jsonl"
    ),
    Kind("study_completed", "study", "survey_responses/completed/CCC001.json", "json"),
    Kind("study_exit", "study", "survey_responses/exits/INC001.json", "json"),
    Kind(
        "social_rl_round",
        "social_rl",
        "outputs/social_rl_2025-11-23_180822/round1_social_rl.json",
        "json",
    ),
    Kind("social_rl_meta", "social_rl", "outputs/social_rl_2025-11-23_180822/meta.json", "json"),
    Kind(
        "social_rl_metrics", "social_rl", "outputs/social_rl_2025-11-23_180822/metrics.json", "json"
    ),
    Kind(
        "social_rl_prar_state", "social_rl", "prar/outputs/2025-11-23_baseline/state.json", "json"
    ),
    Kind("dialogue_conversations", "dialogue", "dialogues/support/2024-05-01.jsonl", "jsonl"),
    Kind("dialogue_feedback", "dialogue", "feedback/support/2024-05-01.jsonl", "jsonl"),
    Kind(
        "decision_sqlite", "decision", "decisions/continuum/coordination_decisions.sqlite", "sqlite"
    ),
    Kind(
        "decision_jsonl",
        "decision",
        "decisions/continuum/exports/decisions-2024-06-03.jsonl",
        "jsonl",
    ),
    Kind("oasst_trees", "oasst", "oasst/en/trees.jsonl", "jsonl"),
    Kind("hh_rlhf_pairs", "hh_rlhf", "hh_rlhf/helpful-base/test.jsonl", "jsonl"),
)
SOURCES = tuple(dict.fromkeys(k.source for k in KINDS))
JSON_KINDS = tuple(k for k in KINDS if k.shape != "sqlite")


def kinds_of(source: str) -> list[Kind]:
    return [k for k in KINDS if k.source == source]


def kind(name: str) -> Kind:
    return next(k for k in KINDS if k.name == name)


def small_settings(**limits: int) -> Settings:
    return Settings(limits=Limits(**limits))


# ---------------------------------------------------------------- the contract


def parse(
    k: Kind, data: bytes, settings: Settings = SETTINGS, *, validate: bool = True
) -> ParseResult:
    """Run the adapter on `data` as a file of kind `k` and check everything the contract promises.

    `validate=False` leaves the Pandera step to a later `validate_results` over many results.
    """
    result = adapter(k.source).parse_file(k.file, data, settings)
    assert_contract(k, result, settings, validate=validate)
    return result


def validate_results(k: Kind, results: list[ParseResult]) -> None:
    """Pandera validation of many results' bronze tables in one call per table."""
    for name, model in bronze_models(k.source).items():
        frames = [r.tables[name] for r in results if name in r.tables and r.tables[name].height]
        if frames:
            validate_bronze(name, model, pl.concat(frames, how="vertical"))


def assert_contract(
    k: Kind, result: ParseResult, settings: Settings = SETTINGS, *, validate: bool = True
) -> None:
    assert isinstance(result, ParseResult), type(result)
    # Nothing lost: every record found is one bronze row or one quarantine row.
    assert result.records_read == result.n_bronze + len(result.quarantine), (
        result.records_read,
        result.n_bronze,
        len(result.quarantine),
    )
    for row in result.quarantine:
        assert row.error_kind in ERROR_KINDS, row
        assert isinstance(row.message, str) and row.message.strip(), row
        assert isinstance(row.locator, str) and row.locator, row
        assert (row.source, row.file) == (k.source, k.rel_path), row
        if row.raw is not None:
            assert isinstance(row.raw, str)
            assert len(row.raw) <= settings.limits.raw_excerpt_chars + EXCERPT_SLACK, len(row.raw)
    # Only an active scenario file may end in a record still being written.
    assert not result.pending or k.active, result.pending
    for tail in result.pending:
        assert (tail.source, tail.file) == (k.source, k.rel_path)
    models = bronze_models(k.source)
    assert set(result.tables) <= set(models), set(result.tables)
    for name, frame in result.tables.items():
        assert isinstance(frame, pl.DataFrame)
        assert frame.schema == polars_schema(models[name]), (name, frame.schema)
        if validate:
            validate_bronze(name, models[name], frame)
        if frame.height:
            assert frame["file"].unique().to_list() == [k.rel_path]
            assert frame["locator"].null_count() == 0


_VALIDATED: dict[str, set[str]] = defaultdict(set)


def validate_bronze(name: str, model: Any, frame: pl.DataFrame) -> None:
    """Pandera validation at data depth of every row not validated before.

    The bronze models only have column-level (row-wise) checks, so a row that passed once passes
    again: skipping repeats keeps thousands of fuzz examples fast without weakening the check.
    """
    assert frame.schema == polars_schema(model), (name, frame.schema)
    if not frame.height:
        return
    seen = _VALIDATED[name]
    keys = [repr(row) for row in frame.iter_rows()]
    new = [i for i, key in enumerate(keys) if key not in seen]
    if new:
        model.validate(frame[new], lazy=True)
        seen.update(keys)


def kinds_found(result: ParseResult) -> set[str]:
    return {row.error_kind for row in result.quarantine}


# ---------------------------------------------------------------- records of a seed file


def jsonl_units(data: bytes) -> list[tuple[int, int, Any]]:
    """(start, end, parsed object) of every complete unit of a clean JSONL(-ish) file (an active
    file's pending tail is left out)."""
    out = []
    for u in split_json_units(data):
        try:
            out.append((u.offset, u.offset + len(u.data), _loads(u.data)))
        except RecordError:
            assert u.is_last and not u.ends_with_newline, u
    return out


def _loads(data: bytes) -> Any:
    # The adapters' reader: clean fixtures hold the one artefact it repairs (a cut UTF-8 char).
    return loads_record(data, max_bytes=1 << 40, max_depth=1 << 20)


def seed_records(k: Kind) -> list[Any]:
    if k.shape == "jsonl":
        return [obj for _, _, obj in jsonl_units(k.seed)]
    if k.shape == "json":
        return [_loads(k.seed.removeprefix(b"\xef\xbb\xbf"))]
    return sqlite_rows(k.seed)


def replace_unit(data: bytes, index: int, new: bytes) -> bytes:
    start, end, _ = jsonl_units(data)[index]
    return data[:start] + new + data[end:]


def paths(value: Any, prefix: tuple = (), max_depth: int = 99) -> list[tuple]:
    """Every path to a nested value (dict keys, list indices), the root `()` included."""
    out = [prefix]
    if len(prefix) >= max_depth:
        return out
    if isinstance(value, dict):
        for key, child in value.items():
            out += paths(child, (*prefix, key), max_depth)
    elif isinstance(value, list):
        for i, child in enumerate(value):
            out += paths(child, (*prefix, i), max_depth)
    return out


SENTINEL = "@@turnlake-fuzz@@"


def mutate(value: Any, path: tuple, action: str, payload: Any = None) -> Any:
    """A deep copy of `value` with the thing at `path` replaced (`set`, `raw`) or removed
    (`delete`).

    `raw` puts a sentinel there; `dumps_with_raw` swaps it for raw bytes afterwards.
    """
    if not path:
        return SENTINEL if action == "raw" else payload
    value = copy.deepcopy(value)
    parent = value
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    if action == "delete":
        del parent[last]
    else:
        parent[last] = SENTINEL if action == "raw" else payload
    return value


def dumps_with_raw(
    value: Any, raw: bytes | None = None, *, indent: int | None = None, ascii_only: bool = False
) -> bytes:
    """JSON text of `value` (stdlib: NaN/Infinity and big ints are written as given)."""
    text = json.dumps(value, indent=indent, ensure_ascii=ascii_only, allow_nan=True)
    data = text.encode("utf-8", errors="surrogatepass")
    if raw is not None:
        data = data.replace(json.dumps(SENTINEL).encode(), raw, 1)
    return data


# ---------------------------------------------------------------- SQLite helpers


DECISION_TABLE = "coordination_decisions"


def sqlite_connect(data: bytes) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.deserialize(data)
    return conn


def sqlite_rows(data: bytes) -> list[dict]:
    conn = sqlite_connect(data)
    cursor = conn.execute(f"SELECT * FROM {DECISION_TABLE} ORDER BY rowid")
    names = [d[0] for d in cursor.description]
    rows = [dict(zip(names, values, strict=True)) for values in cursor]
    conn.close()
    return rows


def sqlite_columns(data: bytes) -> list[str]:
    conn = sqlite_connect(data)
    names = [r[1] for r in conn.execute(f"PRAGMA table_info({DECISION_TABLE})")]
    conn.close()
    return names


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def sqlite_edit(data: bytes, *statements: tuple[str, tuple]) -> bytes:
    """The seed database with SQL statements applied, as file bytes."""
    conn = sqlite_connect(data)
    for sql, params in statements:
        conn.execute(sql, params)
    conn.commit()
    out = conn.serialize()
    conn.close()
    return out


def sqlite_database(columns: list[str], rows: list[tuple], table: str = DECISION_TABLE) -> bytes:
    conn = sqlite3.connect(":memory:")
    conn.execute(f"CREATE TABLE {quote(table)} ({', '.join(quote(c) for c in columns)})")
    marks = ", ".join("?" for _ in columns)
    conn.executemany(f"INSERT INTO {quote(table)} VALUES ({marks})", rows)
    conn.commit()
    out = conn.serialize()
    conn.close()
    return out


# ---------------------------------------------------------------- compressed payloads


@cache
def gzip_bomb(inflated_bytes: int) -> bytes:
    """A small gzip stream that inflates to `inflated_bytes` of valid JSON (`[`, spaces, `]`)."""
    out = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    chunk = b" " * (1 << 20)
    parts = [out.compress(b"[")]
    for _ in range(inflated_bytes // len(chunk)):
        parts.append(out.compress(chunk))
    parts.append(out.compress(b"]"))
    parts.append(out.flush())
    return b"".join(parts)


def gzip_json(value: Any) -> bytes:
    return gzip.compress(orjson.dumps(value))
