"""The native hashes computed in the plan (`sha256_hex`: prompt hashes, release order, context
hashes; `keyed_hash`: the released prompt hashes) give exactly what hashlib / hmac give, byte for
byte: a released hash must not change when the code that computes it does."""

from __future__ import annotations

import hashlib
import hmac

import polars as pl
import pytest

from pipelines.release.privatize.privatize import keyed_hash
from pipelines.sources.base import sha256_hex

# ASCII, non-ASCII (2-, 3- and 4-byte UTF-8), empty, null, and longer than one sha256 block.
VALUES = ["hello", "héllo wörld ✓ 🙂", "", None, "x" * 200]


def test_sha256_hex_is_hashlibs_sha256_of_the_utf8_bytes_and_null_stays_null() -> None:
    frame = pl.DataFrame({"text": VALUES}, schema={"text": pl.String})

    got = frame.select(sha256_hex(pl.col("text"))).to_series().to_list()

    assert got[:3] == [
        "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824",
        hashlib.sha256("héllo wörld ✓ 🙂".encode()).hexdigest(),
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    ]
    assert got[3] is None
    assert got[4] == hashlib.sha256(b"x" * 200).hexdigest()


def test_sha256_hex_runs_in_a_streaming_lazy_plan() -> None:
    lazy = pl.LazyFrame({"text": ["a", None]}, schema={"text": pl.String})

    got = lazy.select(h=sha256_hex(pl.col("text"))).collect(engine="streaming")

    assert got["h"].to_list() == [hashlib.sha256(b"a").hexdigest(), None]
    assert got.schema["h"] == pl.String


@pytest.mark.parametrize(
    "key",
    [b"k" * 32, b"fixed-key-for-content-hash-0001", b"\xff" * 64, bytes(range(100))],
    ids=["short", "ascii", "one block", "longer than a block (hashed first)"],
)
def test_keyed_hash_is_hmac_sha256_and_null_stays_null(key: bytes) -> None:
    frame = pl.DataFrame({"prompt_hash": VALUES}, schema={"prompt_hash": pl.String})

    got = frame.select(keyed_hash(pl.col("prompt_hash"), key)).to_series().to_list()

    expected = [
        None if v is None else hmac.new(key, v.encode(), hashlib.sha256).hexdigest() for v in VALUES
    ]
    assert got == expected


def test_sha256_hex_of_a_column_of_type_null_is_a_null_string() -> None:
    frame = pl.DataFrame({"text": [None, None]})  # no strings at all: Polars types it Null

    got = frame.select(sha256_hex(pl.col("text"))).to_series()

    assert got.dtype == pl.String
    assert got.to_list() == [None, None]
