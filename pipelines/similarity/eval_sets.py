"""Evaluation sets read for decontamination: JSONL (one object a line) or Parquet, each record's
prompt from a `prompt` field (a string, or a list of chat messages) or a `messages` field (chat
messages: the Hugging Face / OpenAI chat shape, `{"role": ..., "content": ...}`). Of chat messages
only the user messages are prompts, each its own (as open-instruct indexes user turns)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import orjson
import polars as pl

from pipelines.config.settings import SettingsError

FIELDS = ("prompt", "messages")
PROMPTS_SCHEMA = pl.Schema({"eval_set": pl.String, "prompt": pl.String})


class EvalSetError(SettingsError):
    """An evaluation set of `[release] decontaminate` that cannot be read: a settings problem
    (exit 2 from the CLI) whose message names the file and what is wrong."""

    def __init__(self, path: Path, problem: str):
        super().__init__(path, [problem])
        self.args = (f"evaluation set {path}: {problem}",)


def file_sha256(path: Path) -> str:
    """The sha256 of an evaluation file's bytes (the release config records it)."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as err:
        raise EvalSetError(path, f"cannot read the evaluation set ({err.strerror})") from None


def _user_texts(value: Any) -> list[str]:
    """The prompts of one record's field value: a string, or the user messages of a chat."""
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, list | tuple):
        return [
            m["content"]
            for m in value
            if isinstance(m, dict) and m.get("role") == "user" and isinstance(m.get("content"), str)
        ]
    return []


def _records(path: Path) -> list[dict]:
    if path.suffix.lower() == ".parquet":
        try:
            frame = pl.read_parquet(path)
        except (OSError, pl.exceptions.PolarsError) as err:
            raise EvalSetError(path, f"not a readable Parquet file ({err})") from None
        present = [f for f in FIELDS if f in frame.columns]
        if not present:
            raise EvalSetError(path, "no `prompt` or `messages` column")
        return frame.select(present).to_dicts()
    try:
        lines = path.read_bytes().splitlines()
    except OSError as err:
        raise EvalSetError(path, f"cannot read the evaluation set ({err.strerror})") from None
    records = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            raise EvalSetError(path, f"line {number} is not JSON") from None
        if not isinstance(record, dict):
            raise EvalSetError(path, f"line {number} is not a JSON object")
        records.append(record)
    return records


def read_eval_set(path: Path, name: str) -> pl.DataFrame:
    """(eval_set = `name`, prompt) of every prompt of the evaluation file `path`. Raises
    `EvalSetError` for a file that is missing, unreadable, not JSONL / Parquet, or without a
    prompt in any record."""
    prompts = [
        text
        for record in _records(path)
        # `prompt` first: a record with both holds its prompt in both
        for field in [next((f for f in FIELDS if record.get(f) is not None), None)]
        if field is not None
        for text in _user_texts(record[field])
    ]
    if not prompts:
        raise EvalSetError(path, "no record with a `prompt` or `messages` field holding a prompt")
    return pl.DataFrame({"eval_set": name, "prompt": prompts}, schema=PROMPTS_SCHEMA)
