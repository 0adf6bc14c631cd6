"""Hypothesis strategies for hostile raw input: JSON values of every type, raw JSON fragments that
no encoder would write (NaN, duplicate keys, invalid UTF-8, ...), and SQLite cell values."""

from __future__ import annotations

import base64
import json

from hypothesis import strategies as st

# Strings that mean something to some parser: timestamps (sane and absurd), numbers as text,
# literals as text, whitespace, and ids from the fixtures.
INTERESTING_TEXT = (
    "",
    " ",
    "\t\n",
    "null",
    "true",
    "NaN",
    "nan",
    "Infinity",
    "-inf",
    "1e400",
    "-1",
    "0",
    "1.5",
    "5",
    "4.999999",
    "2024-06-01T10:00:00Z",
    "2024-06-01 10:00:00",
    "2024-06-01T10:00:00+14:00",
    "1717320000000",
    "1717320000",
    "1717320000000000",
    "9999-12-31T23:59:59-10:00",
    "0001-01-01T00:00:00+10:00",
    "0001-01-01",
    "9999-12-31T23:59:59",
    "2024-13-45T99:99:99Z",
    "0000-00-00",
    "1e300",
    "-1e20",
    "18446744073709551616",
    "gzip:",
    "gzip:!!!",
    "gzip:H4sI",
    "operator",
    "resident",
    "user",
    "assistant",
    "POSTED",
    "SILENT",
    "human",
    "ai-persona",
    "d-001",
    "s-alpha",
    "\x00",
    "\u202e",
    "💥",
    "a" * 300,
)

# Numbers that sit on a boundary: Int64/UInt64 limits, float extremes, the epoch-unit cut-offs
# of parse_ts, the 1990–2100 window, scores just outside [0, 1] and [0, 5].
INTERESTING_NUMBERS = (
    0,
    -0.0,
    1,
    -1,
    2**31,
    2**53 + 1,
    2**63 - 1,
    2**63,
    -(2**63),
    -(2**63) - 1,
    2**64 - 1,
    2**64,
    10**30,
    1e11,
    1e14,
    99999999999,
    1e300,
    -1e300,
    5e-324,
    1.7976931348623157e308,
    631152000,
    4102444800,
    4102444800000,
    1717320000000,
    1.0000001,
    -1e-9,
    5.0000001,
)

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(INTERESTING_NUMBERS),
    st.text(max_size=40),
    st.sampled_from(INTERESTING_TEXT),
)

json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=5)
        | st.dictionaries(
            st.text(max_size=12) | st.sampled_from(("id", "role", "content", "timestamp", "turn")),
            children,
            max_size=5,
        )
    ),
    max_leaves=15,
)

# One representative of every JSON type (and the sub-cases adapters care about): used to put
# a wrong type into every field of every record.
TYPE_REPRESENTATIVES = (
    None,
    True,
    False,
    0,
    -1,
    7,
    1.5,
    2**64 - 1,
    1e300,
    "",
    "text",
    "12",
    [],
    [1, "a"],
    {},
    {"k": None},
)


def _nested(depth: int, kind: str) -> bytes:
    if kind == "list":
        return b"[" * depth + b"]" * depth
    return b'{"a":' * depth + b"1" + b"}" * depth


# Raw JSON *value* fragments no JSON encoder would write; spliced into a record in place of a
# field's value. Every kind of hostile input the robustness suite promises to survive.
NAN_LITERALS = (b"NaN", b"Infinity", b"-Infinity", b"-NaN", b"1e400", b"-1e400", b"1" + b"0" * 400)
INVALID_UTF8 = (
    b'"\xff"',
    b'"abc\xc3"',
    b'"abc\xe2\x82"',
    b'"\xed\xa0\x80"',
    b'"\xc0\xaf"',
    b'"\xf5\x80\x80\x80"',
    b'"ok\xfe\xffok"',
)
BAD_ESCAPES = (
    b'"\\ud800"',
    b'"\\udfff\\ud800"',
    b'"\\u00"',
    b'"\\x41"',
    b'"\x00"',
    b'"a\nb"',
    b"'single'",
)
ABSURD_TIMESTAMPS = (
    b"1e300",
    b"-1e300",
    b"-1e20",
    b"99999999999999999999",
    b"18446744073709551615",
    b"-1",
    b"0",
    b"9223372036854775808",
    b"-9223372036854775809",
    b'"9999-12-31T23:59:59-10:00"',
    b'"0001-01-01T00:00:00+10:00"',
    b'"0001-01-01"',
    b'"9999-12-31"',
    b'"2024-13-45T99:99:99Z"',
    b'"1e400"',
    b'"NaN"',
    b'"-inf"',
    b'"  "',
    b"true",
    b"[2024, 6, 1]",
    b'{"$date": 1717320000000}',
)
DUPLICATE_KEY_OBJECTS = (b'{"a":1,"a":"two"}', b'{"role":"user","role":5}', b'{"":1,"":{"":[]}}')

adversarial_fragments = st.one_of(
    st.sampled_from(
        NAN_LITERALS + INVALID_UTF8 + BAD_ESCAPES + ABSURD_TIMESTAMPS + DUPLICATE_KEY_OBJECTS
    ),
    st.builds(_nested, st.integers(min_value=1, max_value=3000), st.sampled_from(("list", "dict"))),
    st.integers(min_value=1_000, max_value=1_000_000).map(lambda n: b'"' + b"x" * n + b'"'),
    st.binary(max_size=40),
)


def duplicate_key_fragment(key: str, first: bytes, second: bytes) -> bytes:
    """Replaces the value of `key` in its object so that `key` appears twice."""
    return first + b"," + json.dumps(key).encode() + b":" + second


json_fragments = json_values.map(lambda v: json.dumps(v).encode())


def _b64gzip(blob: bytes) -> str:
    return "gzip:" + base64.b64encode(blob).decode()


# SQLite cell values: every storage class, JSON text (valid and not), and compressed payloads.
sqlite_values = st.one_of(
    st.none(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(),  # NaN is stored as NULL; ±inf as REAL
    st.text(max_size=40),
    st.sampled_from(INTERESTING_TEXT),
    json_values.map(json.dumps),
    st.binary(max_size=60),
    st.binary(max_size=60).map(lambda b: b"\x1f\x8b" + b),  # gzip magic, garbage after
    st.binary(max_size=60).map(_b64gzip),
)
