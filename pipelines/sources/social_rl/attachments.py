"""Other files of a run folder (agent profiles, state logs, reports): kept as run attachments.

`outputs/<run_dir>/*` and `prar/outputs/<run>/*` files with a text suffix that no other file kind
of this source reads become one bronze row each: the file's name, size, sha256 and its text, so
nothing a run wrote is dropped silently. Files with other suffixes (images, archives) stay
unclaimed and are listed as not recognised by the build summary and `turnlake status`.
"""

from __future__ import annotations

from pathlib import Path

from pipelines.sources.base import RecordError, content_hash

TEXT_SUFFIXES = (".json", ".jsonl", ".txt", ".md", ".log", ".csv", ".yaml", ".yml")
# (glob under the raw root, run kind): the folders whose other files are attachments.
FOLDERS = (("outputs/*/", "social_rl"), ("prar/outputs/*/", "prar"))
PATTERNS = tuple(f"{folder}*{suffix}" for folder, _ in FOLDERS for suffix in TEXT_SUFFIXES)


def is_attachment(rel_path: str) -> bool:
    parts = rel_path.split("/")
    in_run = (len(parts) == 3 and parts[0] == "outputs") or (
        len(parts) == 4 and parts[:2] == ["prar", "outputs"]
    )
    name = parts[-1]
    return in_run and not name.startswith(".") and name.lower().endswith(TEXT_SUFFIXES)


def attachment_row(data: bytes, rel_path: str, max_bytes: int) -> dict:
    if len(data) > max_bytes:
        raise RecordError("too_large", f"attachment is {len(data)} bytes, limit is {max_bytes}")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise RecordError("invalid_encoding", f"attachment is not UTF-8 text: {err}") from None
    path = Path(rel_path)
    return {
        "run_kind": "prar" if rel_path.startswith("prar/") else "social_rl",
        "run_dir": path.parent.name,
        "name": path.name,
        "n_bytes": len(data),
        "sha256": content_hash(data),
        "content": text,
    }
