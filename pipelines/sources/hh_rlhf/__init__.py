"""Adapter for the `hh_rlhf` source: Anthropic HH-RLHF preference pairs,
`hh_rlhf/**/*.jsonl` and `hh_rlhf/**/*.jsonl.gz` (one `{"chosen": ..., "rejected": ...}` per line).

Each pair is split into the prompt both transcripts share and the two answers to it
(`records.split_pair`, whose docstring states the rule for every odd case of the real files); a
pair that cannot be split is quarantined as `bad_value` with the reason. A gzip file is inflated
whole, up to `max_file_bytes`: a file that is not gzip is `unreadable`, one whose stream stops
early is `truncated`, one that inflates past the limit is `too_large` (one quarantine row each).

The dataset of a file is the first folder under `hh_rlhf/` (`harmless-base`, `helpful-online`,
...; `default` for files directly under it).
"""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any

from pipelines.config.settings import Settings
from pipelines.sources.base import (
    ParseResult,
    QuarantineRow,
    RawFile,
    RecordError,
    dataset_of,
    find_raw_files,
    quarantine_row,
)
from pipelines.sources.hh_rlhf.records import pair_row
from pipelines.sources.jsonio import Span, read_jsonl

SOURCE = "hh_rlhf"
FOLDER = "hh_rlhf"
PAIRS = "hh_rlhf_pairs"


def discover(raw_root: Path) -> list[RawFile]:
    return find_raw_files(SOURCE, raw_root, [f"{FOLDER}/**/*.jsonl", f"{FOLDER}/**/*.jsonl.gz"])


def inflate(data: bytes, max_bytes: int) -> bytes:
    """The bytes of a gzip file, never more than `max_bytes` of them (gzip bombs)."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(data, max_bytes)
        if inflater.unconsumed_tail and inflater.decompress(inflater.unconsumed_tail, 1):
            raise RecordError("too_large", f"file inflates to more than {max_bytes} bytes")
    except zlib.error as exc:
        raise RecordError("unreadable", f"file is not valid gzip: {exc}") from None
    if not inflater.eof:
        raise RecordError("truncated", "gzip stream ends early: the file was cut")
    return out


def parse_file(file: RawFile, data: bytes, settings: Settings) -> ParseResult:
    limits = settings.limits
    try:
        if len(data) > limits.max_file_bytes:
            raise RecordError(
                "too_large", f"file is {len(data)} bytes, limit is {limits.max_file_bytes}"
            )
        if file.rel_path.endswith(".gz"):
            data = inflate(data, limits.max_file_bytes)
    except RecordError as err:
        row = QuarantineRow(SOURCE, file.rel_path, "file", err.kind, err.message, None)
        return ParseResult(records_read=1, quarantine=[row])
    return _pairs(file, data, settings, 0)


def parse_tail(
    file: RawFile, data: bytes, start: int | Span, settings: Settings
) -> ParseResult | None:
    """The pairs from byte `start` on (a pair is one line, judged alone), so a JSONL file that grew
    is parsed by its tail (pipelines/ingest/append.py); None for gzip, whose bytes are no lines."""
    if file.rel_path.endswith(".gz") or len(data) > settings.limits.max_file_bytes:
        return None
    return _pairs(file, data, settings, start)


def _pairs(file: RawFile, data: bytes, settings: Settings, start: int | Span) -> ParseResult:
    limits = settings.limits
    read = read_jsonl(file, data, limits, start=start)
    dataset = dataset_of(file.rel_path)
    rows: list[dict[str, Any]] = []
    quarantine = list(read.quarantine)
    for unit, record in read.records:
        try:
            row = pair_row(record, dataset)
        except RecordError as err:
            quarantine.append(quarantine_row(file, unit.locator, err, unit.data, limits))
            continue
        rows.append({"file": file.rel_path, "locator": unit.locator, "line": unit.line, **row})
    return ParseResult(
        records_read=read.records_read,
        rows={PAIRS: rows},
        quarantine=quarantine,
        unparsed=len(read.quarantine),
    )
