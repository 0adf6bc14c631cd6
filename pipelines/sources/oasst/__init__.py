"""Adapter for the `oasst` source: OpenAssistant message-tree exports, `oasst/**/*.jsonl`.

One line = one message tree (`message_tree_id`, `tree_state`, a `prompt` node whose `replies` nest
to any depth). The tree is one bronze row whose `messages` list holds every node in depth-first
pre-order (a node, then each reply's subtree in the order written), each with its parent's id and
its depth. A node that breaks the format (no id, a role other than prompter/assistant, a
`parent_id` that is not its parent's id, an id used twice) rejects its whole tree: a tree with a
hole is no tree. Which messages become turns (deleted, unreviewed, synthetic) is decided in silver
(`[oasst]` settings); bronze keeps them all.

The dataset of a file is the first folder under `oasst/` (`default` for files directly under it).
"""

from __future__ import annotations

from pathlib import Path

from pipelines.config.settings import Settings
from pipelines.sources.base import (
    ParseResult,
    RawFile,
    dataset_of,
    find_raw_files,
)
from pipelines.sources.jsonio import Span, jsonl_file_rows
from pipelines.sources.oasst.records import tree_row

SOURCE = "oasst"
FOLDER = "oasst"
TREES = "oasst_trees"


def discover(raw_root: Path) -> list[RawFile]:
    return find_raw_files(SOURCE, raw_root, [f"{FOLDER}/**/*.jsonl"])


def parse_file(file: RawFile, data: bytes, settings: Settings) -> ParseResult:
    return parse_tail(file, data, 0, settings)


def parse_tail(file: RawFile, data: bytes, start: int | Span, settings: Settings) -> ParseResult:
    """The trees from byte `start` on: a tree is one line and its checks stay inside it, so a file
    that grew is parsed by its tail (pipelines/ingest/append.py)."""
    dataset = dataset_of(file.rel_path)
    tz = settings.timezone_for(SOURCE)
    return jsonl_file_rows(
        file, data, settings.limits, TREES, lambda record: tree_row(record, dataset, tz), start
    )
