"""Source adapter `social_rl`: multi-agent Social RL rounds and the PRAR states they used.

Layout under the raw root: `outputs/<run_dir>/round<N>_social_rl.json`, optional
`outputs/<run_dir>/meta.json`, `metrics.json` and `policy_state.json`, and
`prar/outputs/<run>/state.json`; other text files of those folders are run attachments
(attachments.py). Each file is one record, parsed alone; sibling files are joined in
`pipelines.transforms.social_rl`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pipelines.config.settings import Settings
from pipelines.sources.base import ParseResult, RawFile, RecordError, find_raw_files, quarantine_row
from pipelines.sources.jsonio import load_json_file
from pipelines.sources.social_rl import attachments
from pipelines.sources.social_rl.fields import LocatedError
from pipelines.sources.social_rl.policy_state import policy_state_row
from pipelines.sources.social_rl.records import meta_row, metrics_row, prar_state_row, round_row

SOURCE = "social_rl"

ROUND_FILE = re.compile(r"^round(\d+)_social_rl\.json$")
# (glob under the raw root, bronze table) for every file kind this source reads.
PATTERNS: tuple[tuple[str, str], ...] = (
    ("outputs/*/round*_social_rl.json", "social_rl_rounds"),
    ("outputs/*/meta.json", "social_rl_meta"),
    ("outputs/*/metrics.json", "social_rl_metrics"),
    ("prar/outputs/*/state.json", "social_rl_prar_states"),
    ("outputs/*/policy_state.json", "social_rl_policy_states"),
    *((pattern, "social_rl_attachments") for pattern in attachments.PATTERNS),
)

__all__ = ["SOURCE", "discover", "parse_file"]


def discover(raw_root: Path) -> list[RawFile]:
    files = find_raw_files(SOURCE, raw_root, [pattern for pattern, _ in PATTERNS])
    return [f for f in files if _table_for(f.rel_path.rpartition("/")[2], f.rel_path)]


RUN_FILES = {
    "meta.json": "social_rl_meta",
    "metrics.json": "social_rl_metrics",
    "policy_state.json": "social_rl_policy_states",
}


def _table_for(name: str, rel_path: str) -> str | None:
    if rel_path.startswith("prar/"):
        table = "social_rl_prar_states" if name == "state.json" else None
    elif ROUND_FILE.match(name):
        table = "social_rl_rounds"
    else:
        table = RUN_FILES.get(name)
    if table is None and attachments.is_attachment(rel_path):
        return "social_rl_attachments"
    return table


def parse_file(file: RawFile, data: bytes, settings: Settings) -> ParseResult:
    """One file = one record: a bronze row in its table, or one quarantine row."""
    table = _table_for(Path(file.rel_path).name, file.rel_path)
    if table is None:
        err = RecordError("unreadable", f"{file.rel_path} is not a social_rl file")
        return ParseResult(
            records_read=1, quarantine=[quarantine_row(file, "file", err, None, settings.limits)]
        )
    result = ParseResult(records_read=1)
    try:
        if table == "social_rl_attachments":
            row = attachments.attachment_row(data, file.rel_path, settings.limits.max_file_bytes)
        else:
            row = _ROW_BUILDERS[table](_load(data, settings), file, settings)
    except LocatedError as err:
        raw = data if err.item is None else err.item  # the offending part when known, else the file
        result.quarantine.append(quarantine_row(file, err.path, err, raw, settings.limits))
        row = None
    except RecordError as err:
        result.quarantine.append(quarantine_row(file, "file", err, data, settings.limits))
        row = None
    rows = [] if row is None else [{"file": file.rel_path, "locator": "file"} | row]
    result.rows[table] = rows
    return result


def _load(data: bytes, settings: Settings) -> Any:
    limits = settings.limits
    if len(data) > limits.max_file_bytes:
        raise RecordError(
            "too_large", f"file is {len(data)} bytes, limit is {limits.max_file_bytes}"
        )
    return load_json_file(
        data, max_bytes=limits.max_record_bytes, max_depth=limits.max_nesting_depth
    )


def _run_folder(file: RawFile) -> str:
    return Path(file.rel_path).parent.name


def _round_row(doc: Any, file: RawFile, settings: Settings) -> dict:
    match = ROUND_FILE.match(Path(file.rel_path).name)
    file_round = int(match.group(1)) if match else None
    return round_row(doc, _run_folder(file), file_round, settings.timezone_for(SOURCE))


_ROW_BUILDERS: dict[str, Callable[[Any, RawFile, Settings], dict]] = {
    "social_rl_rounds": _round_row,
    "social_rl_meta": lambda doc, file, s: meta_row(doc, _run_folder(file), s.timezone_for(SOURCE)),
    "social_rl_metrics": lambda doc, file, s: metrics_row(doc, _run_folder(file)),
    "social_rl_prar_states": lambda doc, file, s: prar_state_row(doc, _run_folder(file)),
    "social_rl_policy_states": lambda doc, file, s: policy_state_row(
        doc, _run_folder(file), s.timezone_for(SOURCE)
    ),
}
