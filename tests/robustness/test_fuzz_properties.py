"""Property-based fuzzing of every adapter's parse_file: random bytes, truncated and corrupted
fixture files, fixture records with a field replaced / removed / duplicated / spliced with a
hostile raw fragment, and records made of random values under the real field names.

Every example goes through `harness.parse`: no exception, records_read == bronze + quarantine,
known error kinds with messages, bronze frames valid against their Pandera models.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipelines.sources.jsonio import split_json_units
from tests.robustness import strategies as S
from tests.robustness.harness import (
    DECISION_TABLE,
    SOURCES,
    Kind,
    dumps_with_raw,
    jsonl_units,
    kinds_of,
    mutate,
    parse,
    paths,
    quote,
    replace_unit,
    sqlite_columns,
    sqlite_database,
    sqlite_edit,
    sqlite_rows,
)

by_source = pytest.mark.parametrize("source", SOURCES)

PREFIXES = (b"", b"\xef\xbb\xbf", b"{", b"[", b"SQLite format 3\x00", b"\x1f\x8b", b"\n\n{\n")


@by_source
@given(data=st.data())
def test_random_bytes(source: str, data) -> None:
    k = data.draw(st.sampled_from(kinds_of(source)))
    prefix = data.draw(st.sampled_from(PREFIXES))
    body = data.draw(st.binary(max_size=3000) | st.text(max_size=500).map(str.encode))
    result = parse(k, prefix + body)
    if k.shape == "sqlite":
        assert result.n_bronze == 0
        assert {q.error_kind for q in result.quarantine} == {"unreadable"}


@by_source
@given(data=st.data())
def test_truncated_fixture(source: str, data) -> None:
    """A valid file cut at a random byte: the complete records survive, the cut one is
    `truncated` (or, in an active file, a pending tail); a SQLite file cut short is survived."""
    k = data.draw(st.sampled_from(kinds_of(source)))
    seed = k.seed
    cut = data.draw(st.integers(min_value=0, max_value=len(seed) - 1))
    truncated = seed[:cut]
    result = parse(k, truncated)
    kinds = [q.error_kind for q in result.quarantine]
    if k.shape == "json":
        if truncated.strip() == seed.strip():
            assert result.n_bronze == 1 and not kinds
        else:
            assert result.n_bronze == 0 and kinds == ["truncated"], result.quarantine
    elif k.shape == "jsonl":
        units = jsonl_units(seed)
        complete = sum(1 for _, end, _ in units if end <= cut)
        rest = truncated[units[complete - 1][1] if complete else 0 :]
        partial = rest.removeprefix(b"\xef\xbb\xbf").strip() if not complete else rest.strip()
        assert result.n_bronze == complete, (result.n_bronze, complete)
        if not partial:
            assert not kinds and not result.pending
        elif k.active:
            assert not kinds and len(result.pending) == 1
        else:
            assert kinds == ["truncated"], result.quarantine


@by_source
@given(data=st.data())
def test_corrupted_fixture(source: str, data) -> None:
    """A few bytes of a valid file overwritten at random places (bit rot, a bad disk, a bad
    copy)."""
    k = data.draw(st.sampled_from(kinds_of(source)))
    corrupted = bytearray(k.seed)
    for _ in range(data.draw(st.integers(min_value=1, max_value=8))):
        at = data.draw(st.integers(min_value=0, max_value=len(corrupted) - 1))
        corrupted[at] = data.draw(st.integers(min_value=0, max_value=255))
    parse(k, bytes(corrupted))


def _draw_json_edit(data, k: Kind, action: str) -> bytes:
    """The seed file with one record edited: `set` a random value, `delete`, `dup`licate a key,
    or splice a `raw` hostile fragment in place of a value."""
    if k.shape == "jsonl":
        units = jsonl_units(k.seed)
        index = data.draw(st.integers(min_value=0, max_value=len(units) - 1))
        record = units[index][2]
    else:
        record = json.loads(k.seed.removeprefix(b"\xef\xbb\xbf"))
    all_paths = paths(record)
    if action in ("delete", "dup"):
        all_paths = [p for p in all_paths if p] or [()]
    path = data.draw(st.sampled_from(all_paths))
    raw = None
    if action == "set":
        edited = mutate(record, path, "set", data.draw(S.json_values))
    elif action == "delete" and path:
        edited = mutate(record, path, "delete")
    elif action == "dup" and path and isinstance(path[-1], str):
        first = data.draw(S.json_fragments)
        second = data.draw(S.json_fragments)
        edited, raw = mutate(record, path, "raw"), S.duplicate_key_fragment(path[-1], first, second)
    else:
        edited, raw = mutate(record, path, "raw"), data.draw(S.adversarial_fragments)
    if k.shape == "jsonl":
        return replace_unit(
            k.seed, index, dumps_with_raw(edited, raw, ascii_only=data.draw(st.booleans()))
        )
    return dumps_with_raw(edited, raw, indent=data.draw(st.sampled_from((None, 2))))


def _assert_other_records_kept(k: Kind, result, new_file: bytes) -> None:
    """Editing one JSONL record never costs the others, as long as the edit keeps the file's
    record boundaries (an edit that adds a line, or a record that no longer starts with `{`/`[`,
    merges with its neighbour by the documented splitting rule)."""
    n = len(jsonl_units(k.seed))
    if k.shape == "jsonl" and not k.active and len(list(split_json_units(new_file))) == n:
        assert result.records_read == n
        assert result.n_bronze >= n - 1


@by_source
@given(data=st.data())
def test_field_replaced_or_removed(source: str, data) -> None:
    k = data.draw(st.sampled_from(kinds_of(source)))
    if k.shape == "sqlite":
        new_file = _draw_sqlite_edit(data, k)
    else:
        new_file = _draw_json_edit(data, k, data.draw(st.sampled_from(("set", "delete", "dup"))))
    _assert_other_records_kept(k, parse(k, new_file), new_file)


@by_source
@given(data=st.data())
def test_hostile_fragment_in_a_field(source: str, data) -> None:
    """NaN/Infinity, invalid UTF-8, bad escapes, absurd timestamps, duplicate keys, deep nesting,
    huge strings or random bytes where a field's value should be."""
    k = data.draw(st.sampled_from(kinds_of(source)))
    if k.shape == "sqlite":
        new_file = _draw_sqlite_edit(data, k, hostile=True)
    else:
        new_file = _draw_json_edit(data, k, "raw")
    _assert_other_records_kept(k, parse(k, new_file), new_file)


@by_source
@given(data=st.data())
def test_random_records_under_real_field_names(source: str, data) -> None:
    """Records built from the kind's real field names with random values and random key sets:
    wrong types in every field, missing keys, unknown keys."""
    k = data.draw(st.sampled_from(kinds_of(source)))
    if k.shape == "sqlite":
        columns = sqlite_columns(k.seed)
        chosen = data.draw(st.lists(st.sampled_from(columns), min_size=1, unique=True))
        rows = data.draw(st.lists(st.tuples(*[S.sqlite_values] * len(chosen)), max_size=4))
        result = parse(k, sqlite_database(chosen, rows))
        if result.records_read != len(rows):  # a database the adapter cannot read: one row says so
            assert result.records_read == 1
            assert [(q.locator, q.error_kind) for q in result.quarantine] == [
                ("file", "unreadable")
            ]
        return
    seeds = (
        [obj for _, _, obj in jsonl_units(k.seed)]
        if k.shape == "jsonl"
        else [json.loads(k.seed.removeprefix(b"\xef\xbb\xbf"))]
    )
    names = sorted({key for obj in seeds if isinstance(obj, dict) for key in obj})
    record = (
        st.dictionaries(st.sampled_from(names), S.json_values, max_size=len(names)) | S.json_values
    )
    if k.shape == "jsonl":
        records = data.draw(st.lists(record, min_size=1, max_size=5))
        body = b"\n".join(dumps_with_raw(r) for r in records) + b"\n"
        result = parse(k, body)
        # One record per line, except that a line not starting with `{`/`[` joins the record above.
        assert result.records_read == len(list(split_json_units(body)))
        if all(isinstance(r, (dict, list)) for r in records):
            assert result.records_read == len(records)
    else:
        result = parse(k, dumps_with_raw(data.draw(record), indent=2))
        assert result.records_read >= 1


# ---------------------------------------------------------------- SQLite edits


COLUMN_NAMES = ("_rowid_", "rowid", "ID", "extra", "metadata ", "ragContext", 'weird "name"', "💥")


def _draw_sqlite_edit(data, k: Kind, hostile: bool = False) -> bytes:
    seed = k.seed
    columns = sqlite_columns(seed)
    n_rows = len(sqlite_rows(seed))
    statements = []
    for _ in range(data.draw(st.integers(min_value=1, max_value=3))):
        op = (
            "cell"
            if hostile
            else data.draw(st.sampled_from(("cell", "cell", "drop", "add", "insert", "empty")))
        )
        if op == "cell":
            column = data.draw(st.sampled_from(columns))
            rowid = data.draw(st.integers(min_value=1, max_value=n_rows))
            if hostile:
                # A hostile fragment stored as TEXT (CAST keeps bytes that are not UTF-8) or as
                # BLOB.
                fragment = data.draw(S.adversarial_fragments)
                as_text = data.draw(st.booleans())
                placeholder = "CAST(? AS TEXT)" if as_text else "?"
                sql = (
                    f"UPDATE OR IGNORE {DECISION_TABLE} SET {quote(column)} = {placeholder} "
                    "WHERE rowid = ?"
                )
                statements.append((sql, (fragment, rowid)))
            else:
                value = data.draw(S.sqlite_values)
                statements.append(
                    (
                        (
                            f"UPDATE OR IGNORE {DECISION_TABLE} SET {quote(column)} = ? "
                            "WHERE rowid = ?"
                        ),
                        (value, rowid),
                    )
                )
        elif op == "drop" and len(columns) > 1:
            column = data.draw(st.sampled_from(columns))
            keep = ", ".join(quote(c) for c in columns if c != column)
            statements += [
                (f"CREATE TABLE t2 AS SELECT {keep} FROM {DECISION_TABLE} ORDER BY rowid", ()),
                (f"DROP TABLE {DECISION_TABLE}", ()),
                (f"ALTER TABLE t2 RENAME TO {DECISION_TABLE}", ()),
            ]
            columns = [c for c in columns if c != column]
        elif op == "add":
            name = data.draw(
                st.sampled_from(COLUMN_NAMES)
                | st.text(min_size=1, max_size=8).filter(lambda n: "\x00" not in n)
            )  # SQL text cannot hold NUL
            if name.lower() in {c.lower() for c in columns}:
                continue
            statements.append((f"ALTER TABLE {DECISION_TABLE} ADD COLUMN {quote(name)}", ()))
            statements.append(
                (f"UPDATE {DECISION_TABLE} SET {quote(name)} = ?", (data.draw(S.sqlite_values),))
            )
            columns = [*columns, name]
        elif op == "insert":
            values = data.draw(st.tuples(*[S.sqlite_values] * len(columns)))
            marks = ", ".join("?" for _ in columns)
            names = ", ".join(quote(c) for c in columns)
            statements.append(
                (f"INSERT OR IGNORE INTO {DECISION_TABLE} ({names}) VALUES ({marks})", values)
            )
            n_rows += 1
        elif op == "empty":
            statements.append((f"DELETE FROM {DECISION_TABLE}", ()))
    return sqlite_edit(seed, *statements)
