"""Timestamp normalisation and typed field access."""

import hashlib
from datetime import UTC, datetime

import pytest

from pipelines.sources.base import RecordError, stable_hash
from pipelines.sources.values import as_float, parse_ts, require


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2025-12-24T03:07:37.371059", datetime(2025, 12, 24, 3, 7, 37, 371059, tzinfo=UTC)),
        ("2026-01-09T07:16:59.838Z", datetime(2026, 1, 9, 7, 16, 59, 838000, tzinfo=UTC)),
        ("2026-01-09T09:16:59+02:00", datetime(2026, 1, 9, 7, 16, 59, tzinfo=UTC)),
        (1766091062.5, datetime(2025, 12, 18, 20, 51, 2, 500000, tzinfo=UTC)),
        (1766091062500, datetime(2025, 12, 18, 20, 51, 2, 500000, tzinfo=UTC)),
        ("1766091062", datetime(2025, 12, 18, 20, 51, 2, tzinfo=UTC)),
        (None, None),
    ],
)
def test_parse_ts_accepts_iso_z_offset_naive_and_epoch_seconds_or_millis(value, expected):
    assert parse_ts(value) == expected


def test_naive_timestamp_is_read_in_the_configured_zone():
    assert parse_ts("2025-06-01T12:00:00", tz="Europe/Berlin") == datetime(
        2025, 6, 1, 10, tzinfo=UTC
    )


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        ("yesterday", "bad_value"),
        (True, "bad_type"),
        ("3025-01-01T00:00:00", "bad_value"),
        (float("nan"), "bad_value"),
        ([2025], "bad_type"),
    ],
)
def test_parse_ts_rejects_unparseable_absurd_and_mistyped_values(value, kind):
    with pytest.raises(RecordError) as err:
        parse_ts(value)
    assert err.value.kind == kind


def test_as_float_accepts_numeric_strings_and_rejects_words():
    assert as_float("5", "q1") == 5.0
    with pytest.raises(RecordError) as err:
        as_float("five", "q1")
    assert err.value.kind == "bad_type"


def test_require_takes_the_first_present_alternative_name():
    assert require({"reason": "r"}, "reasoning", "reason") == "r"
    with pytest.raises(RecordError) as err:
        require({}, "reasoning", "reason")
    assert err.value.kind == "missing_field"


def test_stable_hash_is_the_sha256_of_the_compact_sorted_utf8_json_text():
    # Hand-written text: keys sorted, no spaces, non-ASCII as UTF-8 (not escaped).
    text = '["support",{"a":"é 🙂","b":[1,2.5,null]}]'
    assert hashlib.sha256(text.encode()).hexdigest()[:20] == "e598f38c8e70fe48d72a"
    assert stable_hash("support", {"b": [1, 2.5, None], "a": "é 🙂"}) == "e598f38c8e70fe48d72a"


def test_stable_hash_is_deterministic_and_order_sensitive():
    assert stable_hash("a", 1) == stable_hash("a", 1)
    assert stable_hash("a", 1) != stable_hash(1, "a")
