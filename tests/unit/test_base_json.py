"""Shared readers: record splitting, JSON repair, limits, pending tails."""

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.config.settings import Limits
from pipelines.sources.base import RawFile, RecordError
from pipelines.sources.jsonio import (
    JsonlRead,
    Span,
    iter_jsonl,
    loads_record,
    read_jsonl,
    split_json_units,
)

LIMITS = Limits()
FILE = RawFile("scenario", Path("x.jsonl"), "scenarios/active/S/x.jsonl")


def _load(data: bytes):
    return loads_record(data, max_bytes=LIMITS.max_record_bytes, max_depth=LIMITS.max_nesting_depth)


def test_split_accepts_pretty_printed_objects_concatenated_with_compact_lines():
    data = b'{"a": 1}\n{\n  "b": {\n    "c": [1,\n 2]\n  }\n}\n\n{"d": 3}\n'
    units = list(split_json_units(data))
    assert [_load(u.data) for u in units] == [{"a": 1}, {"b": {"c": [1, 2]}}, {"d": 3}]
    assert [u.line for u in units] == [1, 2, 9]


def test_split_skips_bom_and_blank_lines_but_keeps_byte_offsets_of_the_file():
    data = b'\xef\xbb\xbf\n{"a": 1}\n'
    (unit,) = split_json_units(data)
    assert unit.line == 2 and unit.offset == 4 and _load(unit.data) == {"a": 1}


@pytest.mark.parametrize(
    "data",
    [b'{"a": 1}', b'{"a": 1}\n', b'{"a": 1}  \n\n', b"[1,\n 2]\n", b'{"a": "x\n  {"}\n'],
)
def test_a_one_record_file_splits_as_the_general_split_cuts_it(data):
    # one record from the first byte takes a short cut; the general split runs for a Span
    (unit,) = split_json_units(data)
    assert [unit] == list(split_json_units(data, Span(offset=0, line=1, at_end=True)))
    assert unit.line == 1 and unit.offset == 0 and unit.is_last
    assert unit.data == data.rstrip() and unit.ends_with_newline == data.endswith(b"\n")


def test_split_keeps_leading_garbage_as_its_own_unit_so_it_is_not_lost():
    units = list(split_json_units(b'garbage\n{"a": 1}\n'))
    assert len(units) == 2 and units[0].data == b"garbage"


def test_utf8_character_cut_before_closing_quote_is_repaired():
    assert _load(b'{"t": "caf\xc3"}') == {"t": "caf"}
    assert _load(b'{"t": "\xe2\x80"}') == {"t": ""}


def test_invalid_utf8_inside_text_is_invalid_encoding_not_repaired():
    with pytest.raises(RecordError) as err:
        _load(b'{"t": "a\xff b"}')
    assert err.value.kind == "invalid_encoding"


def test_record_over_size_limit_is_too_large():
    with pytest.raises(RecordError) as err:
        loads_record(b'{"a": "' + b"x" * 100 + b'"}', max_bytes=50, max_depth=10)
    assert err.value.kind == "too_large"


def test_record_nested_deeper_than_limit_is_too_large():
    deep = b"[" * 100 + b"]" * 100
    with pytest.raises(RecordError) as err:
        loads_record(deep, max_bytes=10_000, max_depth=64)
    assert err.value.kind == "too_large"


def test_brackets_inside_strings_do_not_count_as_nesting():
    text = b'{"t": "' + b"[" * 200 + b'"}'
    assert loads_record(text, max_bytes=10_000, max_depth=8) == {"t": "[" * 200}


def test_unfinished_last_line_of_active_file_is_pending_not_quarantined():
    result = read_jsonl(FILE, b'{"a": 1}\n{"b": "half', LIMITS, active=True)
    assert len(result.records) == 1 and result.quarantine == []
    assert [p.locator for p in result.pending] == ["line 2 (byte 9)"]
    assert result.records_read == 1


def test_unfinished_last_line_of_closed_file_is_truncated():
    result = read_jsonl(FILE, b'{"a": 1}\n{"b": "half', LIMITS, active=False)
    assert [q.error_kind for q in result.quarantine] == ["truncated"]
    assert result.records_read == 2 and result.pending == []


def test_records_are_parsed_one_at_a_time_as_they_are_asked_for():
    out = JsonlRead()
    records = iter_jsonl(FILE, b'{"a": 1}\n{"b": nope}\n{"c": 3}\n', LIMITS, out)
    _, first = next(records)
    assert first == {"a": 1}
    assert out.quarantine == []  # the bad second line is not read yet
    assert [obj for _, obj in records] == [{"c": 3}]
    assert [q.locator for q in out.quarantine] == ["line 2 (byte 9)"]
    assert out.records == []


def test_bad_line_in_the_middle_is_invalid_json_and_neighbours_survive():
    result = read_jsonl(FILE, b'{"a": 1}\n{"b": nope}\n{"c": 3}\n', LIMITS)
    assert [o for _, o in result.records] == [{"a": 1}, {"c": 3}]
    assert [(q.error_kind, q.locator) for q in result.quarantine] == [
        ("invalid_json", "line 2 (byte 9)")
    ]


def _depth_exceeds_byte_by_byte(data: bytes, max_depth: int) -> bool:
    """The plain definition the fast check must agree with."""
    depth, in_string, escaped = 0, False, False
    for ch in data:
        if in_string:
            escaped, in_string = (False, in_string) if escaped else (ch == 0x5C, ch != 0x22)
        elif ch == 0x22:
            in_string = True
        elif ch in b"{[":
            depth += 1
            if depth > max_depth:
                return True
        elif ch in b"}]":
            depth -= 1
    return False


@settings(max_examples=400, derandomize=True)
@given(st.lists(st.sampled_from(list(b'{}[]"\\a,:\n')), max_size=60).map(bytes), st.integers(0, 6))
def test_fast_depth_check_agrees_with_the_byte_by_byte_definition(data, max_depth):
    from pipelines.sources.jsonio import _depth_exceeds

    assert _depth_exceeds(data, max_depth) == _depth_exceeds_byte_by_byte(data, max_depth)
