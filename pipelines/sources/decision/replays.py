"""Replay results (what another persona or model chose for a decision): `replays/**/*.jsonl` under
the raw root, one result per line, in either of two shapes:

- plain: `{"decision_id", "persona", "action", "confidence", "reasoning", "response"}`
  (`decision_id`, `persona`, `action` required);
- the OpenAI Batch API output of a `turnlake decision replay` file:
  `{"custom_id": <decision id>, "response": {"status_code": 200, "body": {"model": …,
  "choices": [{"message": {"content": "{\\"action\\": …, \\"response\\": …}"}}]}}, "error": null}`;
  the persona is the folder under `replays/` (`replays/<persona>/…`), the content is the
  decision completion JSON the release trains on (`action` required; `response`, `confidence`,
  `reasoning` optional).

A failed request (`error` set, status ≠ 200), content that is not that JSON, or a batch line
with no persona folder is quarantined (`bad_value` / `missing_field`) with the reason.
"""

from __future__ import annotations

from typing import Any

import orjson

from pipelines.config.settings import Settings
from pipelines.sources.base import (
    ParseResult,
    QuarantineRow,
    RawFile,
    RecordError,
    dumps_or_none,
    quarantine_row,
)
from pipelines.sources.jsonio import Span, read_jsonl
from pipelines.sources.values import as_float, expect_type, require

FOLDER = "replays"
REPLAYS_TABLE = "decision_replay_results"


def _text(value: Any, what: str) -> str | None:
    return None if value is None else expect_type(value, str, what)


def _choice(fields: dict, what: str) -> dict[str, Any]:
    confidence = as_float(fields.get("confidence"), f"{what}.confidence")
    if confidence is not None and not 0.0 <= confidence <= 1.0:
        raise RecordError("bad_value", f"{what}.confidence {confidence} is outside [0,1]")
    return {
        "action": expect_type(require(fields, "action"), str, f"{what}.action"),
        "confidence": confidence,
        "reasoning": _text(fields.get("reasoning"), f"{what}.reasoning"),
        "response": _text(fields.get("response"), f"{what}.response"),
    }


def _batch_output(record: dict, persona: str | None) -> dict[str, Any]:
    if persona is None:
        raise RecordError(
            "missing_field", "a batch output line needs its persona folder: replays/<persona>/"
        )
    if record.get("error") is not None:
        raise RecordError("bad_value", f"the request failed: {orjson.dumps(record['error'])!r}")
    response = expect_type(require(record, "response"), dict, "response")
    if response.get("status_code") != 200:
        raise RecordError("bad_value", f"the request failed: status {response.get('status_code')}")
    body = expect_type(require(response, "body"), dict, "response.body")
    choices = expect_type(require(body, "choices"), list, "response.body.choices")
    if not choices:
        raise RecordError("bad_value", "response.body.choices is empty")
    message = expect_type(
        expect_type(choices[0], dict, "choices[0]").get("message"), dict, "message"
    )
    content = expect_type(require(message, "content"), str, "message.content")
    try:
        completion = orjson.loads(content)
    except orjson.JSONDecodeError:
        raise RecordError(
            "bad_value", "message.content is not the decision JSON {action, response}"
        ) from None
    return {
        "decision_id": expect_type(require(record, "custom_id"), str, "custom_id"),
        "persona": persona,
        "model": _text(body.get("model"), "response.body.model"),
        "shape": "openai_batch",
        **_choice(expect_type(completion, dict, "message.content"), "message.content"),
    }


def replay_result_row(record: dict, persona_folder: str | None) -> dict[str, Any]:
    """The bronze columns of one replay result; RecordError if it breaks a rule above."""
    if "custom_id" in record:
        return _batch_output(record, persona_folder)
    known = {"decision_id", "persona", "action", "confidence", "reasoning", "response", "model"}
    return {
        "decision_id": expect_type(require(record, "decision_id"), str, "decision_id"),
        "persona": expect_type(require(record, "persona"), str, "persona"),
        "model": _text(record.get("model"), "model"),
        "shape": "plain",
        **_choice(record, "result"),
        "extra": dumps_or_none({k: v for k, v in record.items() if k not in known}),
    }


def parse_replays(
    file: RawFile, data: bytes, settings: Settings, start: int | Span = 0
) -> ParseResult:
    """One replay results file → result rows, or a quarantine row per bad line (those from byte
    `start` on: the tail of a file that grew)."""
    parts = file.rel_path.split("/")
    persona_folder = parts[1] if len(parts) > 2 else None
    read = read_jsonl(file, data, settings.limits, start=start)
    rows: list[dict[str, Any]] = []
    quarantine: list[QuarantineRow] = list(read.quarantine)
    for unit, record in read.records:
        try:
            expect_type(record, dict, "a replay result")
            row = {"extra": None, **replay_result_row(record, persona_folder)}
        except RecordError as err:
            quarantine.append(quarantine_row(file, unit.locator, err, record, settings.limits))
            continue
        rows.append({"file": file.rel_path, "locator": unit.locator, "line": unit.line, **row})
    return ParseResult(
        records_read=read.records_read,
        rows={REPLAYS_TABLE: rows},
        quarantine=quarantine,
        unparsed=len(read.quarantine),
    )
