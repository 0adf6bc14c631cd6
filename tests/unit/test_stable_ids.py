"""Ids in the plan (transforms/stable_ids.py) are exactly the ids `stable_hash` gives: the JSON text
Polars writes equals orjson's on tricky values, and the hash of it equals `stable_hash`'s."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import orjson
import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.sources.base import stable_hash
from pipelines.transforms.stable_ids import (
    json_literal,
    json_number,
    json_string,
    json_utc_ts,
    stable_hash_expr,
)

TRICKY_FLOATS = [
    0.0,
    -0.0,
    1.0,
    -3.0,
    100.0,
    0.1,
    1e-05,  # Python's repr: 1e-05; orjson and Polars: 0.00001
    1e-07,
    1.5e-07,
    1e15,
    1e16,  # Python's repr: 1e+16 (orjson too)
    1.2345678901234568e17,
    9007199254740993.0,
    5e-324,
    1.7976931348623157e308,
    1 / 3,
]
TRICKY_TEXTS = [
    "",
    "plain",
    'quote " and backslash \\',
    "tab\tnew\nline\rform\fback\b",
    "\x00\x01\x1f\x7f",
    "ünïcödé ✓ 😀 \u2028\u2029",
    "\\u0000 is not a control character",
]


def _texts(frame: pl.DataFrame, expr: pl.Expr) -> list[str | None]:
    return frame.select(expr).to_series().to_list()


def _orjson(value: object) -> str:
    return orjson.dumps(value).decode()


def test_json_number_writes_floats_as_orjson_does():
    frame = pl.DataFrame({"x": TRICKY_FLOATS}, schema={"x": pl.Float64})
    assert _texts(frame, json_number("x")) == [_orjson(v) for v in TRICKY_FLOATS]


def test_json_number_exponent_and_integer_forms_by_hand():
    frame = pl.DataFrame({"x": [1e-05, 1e-07, 1e16, -0.0, 2.0]})
    assert _texts(frame, json_number("x")) == ["0.00001", "1e-7", "1e+16", "-0.0", "2.0"]


def test_json_number_writes_nan_infinities_and_nulls_as_null():
    frame = pl.DataFrame({"x": [math.nan, math.inf, -math.inf, None]}, schema={"x": pl.Float64})
    assert _texts(frame, json_number("x")) == ["null"] * 4


def test_json_number_writes_integers_without_a_fraction():
    frame = pl.DataFrame({"x": [0, -7, 2**62, None]}, schema={"x": pl.Int64})
    assert _texts(frame, json_number("x")) == ["0", "-7", str(2**62), "null"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=50))
def test_json_number_matches_orjson_on_any_float(values):
    frame = pl.DataFrame({"x": values}, schema={"x": pl.Float64})
    assert _texts(frame, json_number("x")) == [_orjson(v) for v in values]


def test_json_string_escapes_as_orjson_does():
    frame = pl.DataFrame({"s": TRICKY_TEXTS})
    assert _texts(frame, json_string("s")) == [_orjson(v) for v in TRICKY_TEXTS]


def test_json_string_escapes_by_hand():
    frame = pl.DataFrame({"s": ['a"b\\c\n\x01é']})
    assert _texts(frame, json_string("s")) == ['"a\\"b\\\\c\\n\\u0001é"']


def test_json_string_null_is_the_json_null_or_stays_null():
    frame = pl.DataFrame({"s": [None]}, schema={"s": pl.String})
    assert _texts(frame, json_string("s")) == ["null"]
    assert _texts(frame, json_string("s", null=None)) == [None]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(), min_size=1, max_size=20))
def test_json_string_matches_orjson_on_any_text(values):
    frame = pl.DataFrame({"s": values}, schema={"s": pl.String})
    assert _texts(frame, json_string("s")) == [_orjson(v) for v in values]


def test_json_utc_ts_is_the_isoformat_string_microseconds_only_when_not_zero():
    stamps = [datetime(2024, 5, 1, 12, 0, 7, tzinfo=UTC), datetime(2024, 5, 1, 12, 0, 7, 50, UTC)]
    frame = pl.DataFrame({"t": stamps}, schema={"t": pl.Datetime("us", "UTC")})
    assert _texts(frame, json_utc_ts("t")) == [_orjson(ts.isoformat()) for ts in stamps]
    assert _texts(frame, json_utc_ts("t")) == [
        '"2024-05-01T12:00:07+00:00"',
        '"2024-05-01T12:00:07.000050+00:00"',
    ]


def test_stable_hash_expr_equals_stable_hash_per_row():
    rows = [
        ("a", 0, "t\n1", 1e-05, None),
        ("ü😀", 12, None, -0.0, "x"),
        ('"q"', -1, "", 1e16, ""),
        ("n", 3, "z", math.nan, "y"),
    ]
    frame = pl.DataFrame(
        rows,
        schema={"e": pl.String, "i": pl.Int64, "t": pl.String, "v": pl.Float64, "w": pl.String},
        orient="row",
    )
    ids = frame.select(
        stable_hash_expr(
            json_literal("feedback"),
            json_string("e"),
            json_number("i"),
            json_string("t"),
            json_number("v"),
            json_string("w"),
        )
    )
    assert ids.to_series().to_list() == [stable_hash("feedback", *row) for row in rows]


def test_stable_hash_expr_by_hand():
    # sha256 of the text ["k","a",1.0] (hashlib), its first 20 hex characters
    frame = pl.DataFrame({"s": ["a"], "v": [1.0]})
    ids = frame.select(stable_hash_expr(json_literal("k"), json_string("s"), json_number("v")))
    assert ids.item() == "e1ad427c5f52a792de66"
