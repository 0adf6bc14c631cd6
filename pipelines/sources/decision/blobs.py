"""Decoding the JSON-text and compressed columns of a decision record, within limits."""

from __future__ import annotations

import base64
import binascii
import zlib
from typing import Any

import orjson

from pipelines.config.settings import Limits
from pipelines.sources.base import RecordError, dumps
from pipelines.sources.jsonio import loads_record

GZIP_PREFIX = "gzip:"
_GZIP_MAGIC = b"\x1f\x8b"


def gunzip_bounded(blob: bytes, max_bytes: int, what: str) -> bytes:
    """Inflate gzip bytes, refusing to produce more than `max_bytes` (gzip bombs)."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(blob, max_bytes)
        if inflater.unconsumed_tail and inflater.decompress(inflater.unconsumed_tail, 1):
            raise RecordError("too_large", f"{what} inflates to more than {max_bytes} bytes")
    except zlib.error as exc:
        raise RecordError("bad_value", f"{what} is not valid gzip: {exc}") from None
    if not inflater.eof:
        raise RecordError("bad_value", f"{what} is a gzip stream that ends early")
    return out


def _gzip_text(encoded: str, limits: Limits, what: str) -> bytes:
    try:
        blob = base64.b64decode(encoded.strip(), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise RecordError("bad_value", f"{what} has invalid base64 after 'gzip:': {exc}") from None
    return gunzip_bounded(blob, limits.max_decompressed_bytes, what)


def parse_json_text(text: bytes | str, limits: Limits, what: str) -> Any:
    """A JSON TEXT column → its value; invalid JSON names the column."""
    data = text.encode() if isinstance(text, str) else text
    try:
        return loads_record(
            data, max_bytes=limits.max_record_bytes, max_depth=limits.max_nesting_depth
        )
    except RecordError as err:
        raise RecordError(err.kind, f"{what}: {err.message}") from None


def decode_rag_context(value: Any, limits: Limits) -> tuple[Any, str | None]:
    """The RAG context as a value plus how it was stored: gzip, plain (JSON text) or object."""
    what = "rag context"
    if value is None:
        return None, None
    if isinstance(value, bytes):
        if value.startswith(_GZIP_MAGIC):
            return parse_json_text(
                gunzip_bounded(value, limits.max_decompressed_bytes, what), limits, what
            ), "gzip"
        return parse_json_text(value, limits, what), "plain"
    if isinstance(value, str):
        if value.startswith(GZIP_PREFIX):
            raw = _gzip_text(value[len(GZIP_PREFIX) :], limits, what)
            return parse_json_text(raw, limits, what), "gzip"
        return parse_json_text(value, limits, what), "plain"
    if isinstance(value, (dict, list)):
        return value, "object"
    raise RecordError("bad_type", f"{what} should be an object or text, got {type(value).__name__}")


def decode_json_part(
    value: Any, limits: Limits, what: str, types: tuple[type, ...] = (dict,)
) -> Any:
    """A context part that SQLite stores as JSON text and JSONL as a nested value."""
    if isinstance(value, (str, bytes)):
        value = parse_json_text(value, limits, what)
    if value is not None and not isinstance(value, types):
        names = "/".join("object" if t is dict else t.__name__ for t in types)
        raise RecordError("bad_type", f"{what} should be {names}, got {type(value).__name__}")
    return value


def json_text_or_none(value: Any) -> str | None:
    if value is None:
        return None
    try:
        return dumps(value)
    except (TypeError, orjson.JSONEncodeError) as exc:
        raise RecordError("bad_value", f"value cannot be stored as JSON: {exc}") from None
